"""Turn a finished research session into an evaluation run record (and a matching suite task).

The session is read only through :mod:`bookmark_research.research.api`. What the run holds:

- ``answers``: one per answered question (``answer_id`` = question id);
- ``claims``: the active claims (retracted ones are withdrawn, not asserted);
- ``citations``: one per (claim, source) pair, with the session's source id, its URL and SHA-256;
  several quotes of one claim from one source are joined (the evaluation counts a pair once);
- ``coverage``: frozen inventory ids, counted as the session's own coverage counts them: *accounted*
  (reviewed or with a linked source, failed fetches included), *text* (a linked source with saved
  page text accepted on review: "usable accepted text"), *reviewed* (an ``inventory_review`` with
  disposition ``reviewed`` over such text), and the answered question ids;
- ``controls``: the session's providers as tools, its budget, its frozen input version, plus the
  model / time window / harness the caller declares; ``measurements``: latency from ``created_at``
  to ``finished_at``, usage counters, cost unknown, basis ``observed``;
- ``report``: the session's report text.

The task skeleton uses the selected inventory ids as ``scope_source_ids`` and the session's
question ids, so coverage rates line up with what the session froze; gold answers are left
``null`` for a person to write (the converter invents no label).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

from bookmark_research import __version__
from bookmark_research.errors import InvalidInputError

QUOTE_JOINER = " […] "
STATUS = {"completed": "completed", "incomplete": "incomplete", "cancelled": "incomplete"}


def _seconds(start: Any, end: Any) -> float | None:
    try:
        first = datetime.fromisoformat(str(start).replace("Z", "+00:00"))
        last = datetime.fromisoformat(str(end).replace("Z", "+00:00"))
    except ValueError:
        return None
    seconds = (last - first).total_seconds()
    return seconds if seconds >= 0 else None


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        return None
    return value


def coverage_ids(coverage: dict[str, Any], questions: list[dict[str, Any]]) -> dict[str, list[str]]:
    """accounted ⊇ text ⊇ reviewed inventory ids from the session's own coverage rows, and the answered
    question ids (one rule for "read" and "reviewed": the research stage's)."""
    rows = coverage.get("rows") or []
    return {"accounted_source_ids": [r["id"] for r in rows if r["accounted_for"]],
            "text_source_ids": [r["id"] for r in rows if r["usable_text"]],
            "reviewed_source_ids": [r["id"] for r in rows if r["substantive_review"]],
            "answered_question_ids": [q["id"] for q in questions if q.get("status") == "answered"]}


def _citations(state: dict[str, Any], claims: list[dict[str, Any]], research_id: str) -> tuple[list[dict[str, Any]], int]:
    sources = {s.get("id"): s for s in state.get("sources") or []}
    citations: list[dict[str, Any]] = []
    joined = 0
    for claim in claims:
        by_source: dict[str, dict[str, Any]] = {}
        for cited in claim.get("citations") or []:
            source_id = str(cited.get("source_id"))
            quote = str(cited.get("quote") or "")
            if source_id in by_source:
                by_source[source_id]["quote"] += QUOTE_JOINER + quote
                joined += 1
                continue
            source = sources.get(source_id) or {}
            entry: dict[str, Any] = {"citation_id": f"{claim['id']}.{len(by_source) + 1}", "claim_id": claim["id"],
                                     "source_id": source_id, "quote": quote, "research_id": research_id}
            url = source.get("canonical_url") or source.get("url")
            if url:
                entry["url"] = str(url)
            sha = cited.get("source_sha256") or source.get("sha256")
            if sha:
                entry["source_sha256"] = str(sha)
            by_source[source_id] = entry
        citations.extend(by_source.values())
    return citations, joined


def run_from_state(state: dict[str, Any], coverage: dict[str, Any], report: str, *, system_id: str, mode: str, comparison_group: str,
                   task_id: str | None = None, run_id: str | None = None, repeat: int = 1, model: str | None = None,
                   time_window: str | None = None, harness_version: str | None = None) -> dict[str, Any]:
    """``{run, task, notes}`` for a finished session ``state`` (the research state.json shape) and its
    ``coverage`` (``research.api.coverage``: rows per frozen inventory entry)."""
    research_id = str(state.get("research_id"))
    status = state.get("status")
    if status not in STATUS:
        raise InvalidInputError(f"research {research_id}: status is {status!r}; only a finished session "
                                "(completed, incomplete or cancelled) can become a run — finish it first")
    notes: list[str] = []
    questions = state.get("questions") or []
    answers = [{"answer_id": q["id"], "text": str(q.get("answer") or "")}
               for q in questions if q.get("status") == "answered"]
    active = [c for c in state.get("claims") or [] if c.get("status", "active") == "active"]
    withdrawn = len(state.get("claims") or []) - len(active)
    if withdrawn:
        notes.append(f"{withdrawn} retracted claim{'' if withdrawn == 1 else 's'} left out: a withdrawn claim is not "
                     "asserted")
    citations, joined = _citations(state, active, research_id)
    if joined:
        notes.append(f"{joined} further quote{'' if joined == 1 else 's'} joined into the citation of the same claim and source "
                     "(the evaluation counts each claim/source pair once)")
    if status == "cancelled":
        notes.append("the session was cancelled: the run is recorded as incomplete")
    latency = _seconds(state.get("created_at"), state.get("finished_at"))
    if latency is None:
        notes.append("no usable created_at/finished_at pair: latency is unknown")
    budget = {str(k): _number(v) for k, v in (state.get("budget") or {}).items()}
    usage = {str(k): _number(v) for k, v in (state.get("usage") or {}).items()}
    tools = sorted({str(p) for key in ("providers", "search_fallback_providers", "fetch_providers")
                    for p in state.get(key) or []})
    scope = state.get("source_scope") or {}
    run = {
        "run_id": run_id or research_id, "task_id": task_id or research_id, "system_id": system_id, "mode": mode,
        "comparison_group": comparison_group, "repeat": repeat, "status": STATUS[status],
        "controls": {"model": model, "tools": tools, "budget": budget,
                     "input_version": scope.get("input_version"), "time_window": time_window,
                     "harness_version": harness_version or f"bookmark-research {__version__}"},
        "answers": answers,
        "claims": [{"claim_id": c["id"], "text": str(c.get("statement") or "")} for c in active],
        "citations": citations,
        "coverage": coverage_ids(coverage, questions),
        "measurements": {"cost_usd": None, "latency_seconds": latency, "basis": "observed", "usage": usage},
        "report": report,
        "artifacts": {"research_id": research_id, "finished_at": state.get("finished_at")},
    }
    task = {
        "task_id": run["task_id"], "prompt": str(state.get("brief") or research_id), "gold_answers": None,
        "scope_source_ids": [entry["id"] for entry in state.get("inventory") or []],
        "question_ids": [q["id"] for q in questions],
    }
    if model is None:
        notes.append("no model declared: controls.model is null (declare it to compare models)")
    return {"research_id": research_id, "run": run, "task": task, "notes": notes}


MAX_REPORT = 1_000_000


def convert_session(app: Any, research_id: str, **labels: Any) -> dict[str, Any]:
    """``{research_id, run, task, notes}`` for research session ``research_id``, read through ``research.api``."""
    from bookmark_research.research import api

    state = api.read_state(app, research_id)
    report = api.report_text(app, research_id)
    out = run_from_state(state, api.coverage(app, research_id), "", **labels)
    if len(report) > MAX_REPORT:
        report = report[:MAX_REPORT]
        out["notes"].append(f"the report is longer than {MAX_REPORT} characters: it is cut there")
    elif not report:
        out["notes"].append("the session has no report text")
    out["run"]["report"] = report
    check_run(out["run"], out["task"])
    return out


def check_run(run: dict[str, Any], task: dict[str, Any]) -> None:
    """Validate ``run`` against the evaluation contract with ``task`` as its suite task."""
    from bookmark_research.evaluation.inputs import validate_inputs

    rubric = {"id": "check", "version": "1", "answer_matching": "check", "citation_support": "check",
              "report_quality": {"check": "check"}}
    suite = {"schema_version": 1, "suite_id": "check", "kind": "annotated_benchmark", "tasks": [task],
             "rubric": rubric}
    validate_inputs(suite, [run])


def check_runs_file(path: str) -> tuple[Path, Any, list[dict[str, Any]]]:
    """The runs file at ``path``: ``(target, document, runs)``. ``target`` must lie outside canvas packages
    (the check ``evaluate --output`` makes); an existing file must be a JSON list of run records or
    ``{"runs": [...]}`` (a missing or empty file is a new list). One-line errors name the file and field."""
    from bookmark_research.canvas.strictjson import load_value
    from bookmark_research.errors import StorageError
    from bookmark_research.evaluation.inputs import check_run_record
    from bookmark_research.paths import enclosing_package

    target = Path(os.path.abspath(os.path.expanduser(path)))
    package = enclosing_package(target.parent.resolve())
    if package is not None:
        raise StorageError(f"runs file {target}: must be outside canvas package directories (found a package at "
                           f"{package})")
    document: Any = []
    if target.exists():
        try:
            data = target.read_bytes()
        except OSError as exc:
            raise StorageError(f"{target}: cannot read ({exc.strerror or exc})") from None
        if data.strip():  # an empty file (e.g. just created with touch) is an empty runs list
            document = load_value(data, str(target))
    runs = document["runs"] if isinstance(document, dict) and set(document) == {"runs"} else document
    if not isinstance(runs, list):
        raise InvalidInputError(f"{target}: must be a JSON list of runs or an object {{\"runs\": [...]}}")
    for i, entry in enumerate(runs):
        try:
            check_run_record(entry, f"runs[{i}]")
        except InvalidInputError as exc:
            raise InvalidInputError(f"{target}: {exc.message}") from None
    return target, document, runs


def save_run(path: str, run: dict[str, Any]) -> dict[str, Any]:
    """Add ``run`` to the runs file at ``path`` (see :func:`check_runs_file`), replacing a run with the same
    ``run_id``; a missing or empty file is created as a list. Atomic; a refused file is left untouched."""
    from bookmark_research.atomic import write_json
    from bookmark_research.errors import StorageError

    target, document, runs = check_runs_file(path)
    position = next((i for i, r in enumerate(runs) if r["run_id"] == run["run_id"]), None)
    if position is None:
        runs.append(run)
    else:
        runs[position] = run
    if not target.parent.is_dir():
        raise StorageError(f"{target.parent}: no such directory")
    try:
        write_json(target, document if isinstance(document, dict) else runs)
    except OSError as exc:
        raise StorageError(f"{target}: cannot write ({exc.strerror or exc})") from None
    return {"output_file": str(target), "replaced": position is not None, "run_count": len(runs)}
