"""The evaluation operations: score research runs, and turn a finished research session into a run.

Where files are written (``output``) is chosen only from a terminal (``evaluate --output``): the MCP tools
neither list nor accept it, so over MCP both operations write nothing.
"""

from __future__ import annotations

from typing import Any

from bookmark_research.core import evaluation_models as m
from bookmark_research.core.app import App
from bookmark_research.core.registry import operation


@operation("evaluate_research", "evaluate", m.EvaluateInput, m.EvaluateOutput, terminal_only_fields=("output",))
def evaluate_research(app: App, p: m.EvaluateInput) -> dict[str, Any]:
    """Score research runs against a suite's gold answers and supplied labels (no model, no provider; missing labels stay null)."""
    from bookmark_research.evaluation.evaluate import evaluate

    result = evaluate(p.suite, p.runs, p.judgments)
    if p.output is None:
        return result
    from bookmark_research.evaluation.report import write_report  # nothing is written on bad input

    return {**result, "artifacts": write_report(p.output, result)}


def _labels(p: m.RunFromSessionInput) -> dict[str, Any]:
    return {k: getattr(p, k) for k in ("system_id", "mode", "comparison_group", "task_id", "run_id", "repeat", "model",
                                       "time_window", "harness_version")}


@operation("evaluation_run_from_session", "evaluate run-from-session", m.RunFromSessionInput, m.RunFromSessionOutput,
           terminal_only_fields=("output",))
def evaluation_run_from_session(app: App, p: m.RunFromSessionInput) -> dict[str, Any]:
    """The evaluation run record of a finished research session (answers, claims, citations, coverage, controls, latency) and a suite task for it."""
    from bookmark_research.evaluation.from_session import check_runs_file, convert_session, save_run

    if p.output is None:
        return convert_session(app, p.research_id, **_labels(p))
    check_runs_file(p.output)  # a refused runs file is reported before the session is read
    out = convert_session(app, p.research_id, **_labels(p))
    return {**out, **save_run(p.output, out["run"])}
