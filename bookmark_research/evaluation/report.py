"""The evaluation as people read it (``evaluation.md``), and writing it next to ``evaluation.json``.

One table per group (task × comparison group): a row per stratum (system × mode × condition) and a
column per metric as ``mean ± sd (n=…)``; then the comparability notes, every run's headline
figures, the runs that were not scored and why, and the fixed limitations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bookmark_research.evaluation.metrics import METRICS

LABELS: dict[str, str] = {
    "answer_precision": "Precision", "answer_recall": "Recall", "answer_f1": "Answer F1",
    "semantic_citation_accuracy": "Citation accuracy", "semantic_claim_support": "Claim support",
    "citation_presence": "Citation presence", "report_quality_normalized": "Report quality",
    "cost_usd": "Cost (USD)", "latency_seconds": "Latency (s)", "accounted_coverage": "Accounted",
    "text_coverage": "Text", "reviewed_coverage": "Reviewed", "questions_coverage": "Questions",
}

#: The figures shown per run and in the terminal summary (the JSON has every metric).
HEADLINE: tuple[str, ...] = (
    "answer_f1", "semantic_citation_accuracy", "semantic_claim_support", "report_quality_normalized",
    "text_coverage", "questions_coverage", "latency_seconds",
)

JSON_NAME = "evaluation.json"
MARKDOWN_NAME = "evaluation.md"


def number(value: float | None, metric: str = "") -> str:
    """A figure at a readable precision (rates to 3 decimals, seconds to 1, dollars to 4 decimals: a mean and
    its standard deviation always line up)."""
    if value is None:
        return "—"
    if metric == "latency_seconds":
        return f"{value:.1f}"
    if metric == "cost_usd":
        return f"{value:.4f}"
    return f"{value:.3f}"


def stat_cell(stat: dict[str, Any], metric: str = "", with_n: bool = True) -> str:
    """``mean ± sd (n=k)``; ``mean (n=1)`` without a variance; ``—`` when nothing is known."""
    if stat["n"] == 0:
        return "— (n=0)" if with_n else "—"
    text = number(stat["mean"], metric)
    if stat["sample_stddev"] is not None:
        text += f" ± {number(stat['sample_stddev'], metric)}"
    return f"{text} (n={stat['n']})" if with_n else text


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def comparability_line(group: dict[str, Any]) -> str:
    comp = group["comparability"]
    if comp["controlled"]:
        return "Controlled: every run declares the same conditions."
    return "Not controlled: " + ", ".join(comp["differences"]) + " differ across the runs of this group."


def render_markdown(result: dict[str, Any]) -> str:
    """The Markdown report of one evaluation result (the output of ``evaluate``)."""
    kind = result["kind"].replace("_", " ")
    out = [f"# Evaluation: {_cell(result['suite_id'])}", "",
           f"{kind.capitalize()} · runs: {result['run_count']} · tasks evaluated: {result['evaluated_task_count']} of "
           f"{result['task_count']} · judgments: {result['judgment_count']} · "
           "no provider quality claim is made.", "",
           f"Suite `{result['suite_sha256'][:16]}` · runs `{result['runs_sha256'][:16]}` · "
           f"judgments `{result['judgments_sha256'][:16]}` (SHA-256 of canonical JSON, first 16 hex digits; "
           "the full hashes are in evaluation.json).", ""]
    for group in result["groups"]:
        out += [f"## Task {_cell(group['task_id'])} · group {_cell(group['comparison_group'])}", "",
                comparability_line(group), "", group["comparability"]["note"], ""]
        header = ["System", "Mode", "Condition", "Runs", *(LABELS[m] for m in METRICS)]
        rows = [[s["system_id"], s["mode"], s["condition_id"][:8], _runs_cell(s),
                 *(stat_cell(s["metrics"][m], m) for m in METRICS)] for s in group["strata"]]
        out += _table(header, rows) + [""]
    out += ["## Runs", ""]
    header = ["Run", "System", "Mode", "Repeat", "Status", *(LABELS[m] for m in HEADLINE)]
    out += _table(header, [[r["run_id"], r["system_id"], r["mode"], str(r["repeat"]), r["status"],
                            *(number(r["metrics"][m], m) for m in HEADLINE)] for r in result["runs"]]) + [""]
    out += ["## Runs not scored", ""]
    if not result["not_scored"]:
        out += ["Every run has all of its label-dependent metrics.", ""]
    for entry in result["not_scored"]:
        null = ", ".join(entry["null_metrics"]) or "none"
        out.append(f"- **{_cell(entry['run_id'])}** ({_cell(entry['system_id'])} / {_cell(entry['mode'])}, "
                   f"{entry['status']}; null: {null}): " + "; ".join(entry["reasons"]) + ".")
    out += ["", "## Limitations", ""]
    out += [f"- {text}" for text in result["limitations"]]
    return "\n".join(out) + "\n"


def _runs_cell(stratum: dict[str, Any]) -> str:
    extra = []
    if stratum["failed_runs"]:
        extra.append(f"{stratum['failed_runs']} failed")
    if stratum["incomplete_runs"]:
        extra.append(f"{stratum['incomplete_runs']} incomplete")
    return f"{stratum['run_count']}" + (f" ({', '.join(extra)})" if extra else "")


def write_report(directory: str, result: dict[str, Any]) -> dict[str, str]:
    """Write ``evaluation.json`` and ``evaluation.md`` into ``directory`` (created if needed); their paths.

    ``directory`` must be absolute and outside canvas packages. Each file is replaced atomically.
    """
    from bookmark_research.atomic import dump_json, write_text
    from bookmark_research.errors import StorageError
    from bookmark_research.paths import checked_store_dir

    target = checked_store_dir(directory, "evaluation output directory")
    markdown = render_markdown(result)
    text = dump_json(result)
    try:
        target.mkdir(mode=0o700, parents=True, exist_ok=True)
        json_path, md_path = Path(target, JSON_NAME), Path(target, MARKDOWN_NAME)
        write_text(json_path, text)
        write_text(md_path, markdown)
    except OSError as exc:
        raise StorageError(f"evaluation output directory {target}: cannot write ({exc.strerror or exc})") from None
    return {"json": str(json_path), "markdown": str(md_path)}
