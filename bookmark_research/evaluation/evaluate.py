"""``evaluate(suite, runs, judgments)``: the whole evaluation as one pure function of its inputs."""

from __future__ import annotations

import copy
from typing import Any

from bookmark_research.evaluation.groups import build_groups
from bookmark_research.evaluation.hashing import canonical_sha256
from bookmark_research.evaluation.inputs import Inputs, condition_key, validate_inputs
from bookmark_research.evaluation.metrics import LABELLED_METRICS, not_scored_reasons, run_metrics

SYNTHETIC_LIMITATION = (
    "These figures come from synthetic fixture data and synthetic labels; they do not measure any host, "
    "model or provider."
)
ANNOTATED_LIMITATION = (
    "These figures describe only the supplied runs, gold answers and labels; they are not a general measure "
    "of any host, model or provider."
)
COMMON_LIMITATIONS = (
    "Coverage counts the source and question ids each run reported; it does not check that those sources "
    "were actually read.",
    "Quotes, pattern matches and content hashes show where text came from; they are not semantic judgements "
    "of whether the text supports a claim.",
    "A missing gold answer, answer match, citation label or report score leaves its metric null; it is "
    "never counted as 0.",
    "Report quality is the supplied rubric scores normalised to 0..1; it is not a RACE, FACT or leaderboard "
    "score.",
    "Means and variances cover only the supplied repeats (the variance needs at least two); no ranking or "
    "causal claim is made.",
)


def limitations(synthetic: bool) -> list[str]:
    """The six fixed limitation statements of every evaluation."""
    return [SYNTHETIC_LIMITATION if synthetic else ANNOTATED_LIMITATION, *COMMON_LIMITATIONS]


def _rows(data: Inputs) -> tuple[list[dict[str, Any]], dict[str, str]]:
    tasks = {t.task_id: t for t in data.suite.tasks}
    rows, conditions = [], {}
    for run, raw in zip(data.runs, data.raw_runs):
        judgment = data.judgments.get(run.run_id)
        condition = canonical_sha256(condition_key(run, judgment))
        conditions[run.run_id] = condition
        raw_judgment = data.raw_judgments[data.judgment_index[run.run_id]] if judgment else None
        row = {
            "run_id": run.run_id, "task_id": run.task_id, "system_id": run.system_id, "mode": run.mode,
            "run_sha256": canonical_sha256(raw),
            "judgment_sha256": canonical_sha256(raw_judgment) if raw_judgment is not None else None,
            "status": run.status, "repeat": run.repeat, "comparison_group": run.comparison_group,
            "condition_id": condition[:16], "external_run_id": run.external_run_id,
            "controls": copy.deepcopy(raw["controls"]),
            "evaluator": judgment.evaluator.model_dump(mode="json") if judgment else None,
            "measurements": copy.deepcopy(raw["measurements"]),
        }
        row.update(run_metrics(data.suite, tasks[run.task_id], run, judgment))
        rows.append(row)
    return rows, conditions


def _not_scored(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        null = [m for m in (*LABELLED_METRICS, "accounted_coverage", "questions_coverage") if row["metrics"][m] is None]
        if null or row["status"] != "completed":
            out.append({"run_id": row["run_id"], "task_id": row["task_id"], "system_id": row["system_id"],
                        "mode": row["mode"], "status": row["status"], "null_metrics": null,
                        "reasons": not_scored_reasons(row, row["judgment_sha256"] is not None)})
    return out


def evaluate(suite: Any, runs: Any, judgments: Any = None) -> dict[str, Any]:
    """Score ``runs`` of ``suite`` with optional ``judgments``; raise ``InvalidInputError`` on bad input.

    Pure: no model, provider, network or file access; the inputs are not modified.
    """
    data = validate_inputs(suite, runs, judgments)
    rows, conditions = _rows(data)
    synthetic = (data.suite.kind == "synthetic_fixture"
                 or any(r.measurements.basis == "synthetic" for r in data.runs)
                 or any(j.evaluator.kind == "synthetic" for j in data.judgments.values()))
    return {
        "schema_version": 1,
        "suite_id": data.suite.suite_id,
        "suite_sha256": canonical_sha256(data.raw_suite),
        "runs_sha256": canonical_sha256(data.raw_runs),
        "judgments_sha256": canonical_sha256(data.raw_judgments),
        "kind": "synthetic_demonstration" if synthetic else "annotated_run_evaluation",
        "provider_quality_claim": False,
        "run_count": len(rows),
        "task_count": len(data.suite.tasks),
        "evaluated_task_count": len({r["task_id"] for r in rows}),
        "judgment_count": len(data.judgments),
        "rubric": data.suite.rubric.model_dump(mode="json"),
        "runs": rows,
        "groups": build_groups(rows, conditions),
        "not_scored": _not_scored(rows),
        "limitations": limitations(synthetic),
    }
