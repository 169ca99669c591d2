"""The evaluation operations: score research runs, and turn a finished research session into a run."""

from __future__ import annotations

from typing import Any

from bookmark_research.core import evaluation_models as m
from bookmark_research.core.app import App
from bookmark_research.core.registry import operation


@operation("evaluate_research", "evaluate", m.EvaluateInput, m.EvaluateOutput)
def evaluate_research(app: App, p: m.EvaluateInput) -> dict[str, Any]:
    """Score research runs against a suite's gold answers and supplied labels (no model, no provider; missing labels stay null)."""
    from bookmark_research.evaluation.evaluate import evaluate

    return evaluate(p.suite, p.runs, p.judgments)


@operation("evaluation_write_report", "evaluate --output", m.EvaluateWriteInput, m.EvaluateWriteOutput,
           read_only=False, mcp=False)
def evaluation_write_report(app: App, p: m.EvaluateWriteInput) -> dict[str, Any]:
    """Score research runs and write evaluation.json and evaluation.md into a folder (nothing is written on bad input)."""
    from bookmark_research.evaluation.evaluate import evaluate
    from bookmark_research.evaluation.report import write_report

    result = evaluate(p.suite, p.runs, p.judgments)
    return {**result, "artifacts": write_report(p.output_directory, result)}


def _labels(p: m.RunFromSessionInput) -> dict[str, Any]:
    return {k: getattr(p, k) for k in ("system_id", "mode", "comparison_group", "task_id", "run_id", "repeat", "model",
                                       "time_window", "harness_version")}


@operation("evaluation_run_from_session", "evaluate run-from-session", m.RunFromSessionInput, m.RunFromSessionOutput)
def evaluation_run_from_session(app: App, p: m.RunFromSessionInput) -> dict[str, Any]:
    """The evaluation run record of a finished research session (answers, claims, citations, coverage, controls, latency) and a suite task for it."""
    from bookmark_research.evaluation.from_session import convert_session

    return convert_session(app, p.research_id, **_labels(p))


@operation("evaluation_save_run_from_session", "evaluate run-from-session --output", m.SaveRunFromSessionInput,
           m.SaveRunFromSessionOutput, read_only=False, mcp=False)
def evaluation_save_run_from_session(app: App, p: m.SaveRunFromSessionInput) -> dict[str, Any]:
    """Add a finished research session's run record to a runs file (a run with the same run_id is replaced)."""
    from bookmark_research.evaluation.from_session import check_runs_file, convert_session, save_run

    check_runs_file(p.output_file)  # a refused output is reported before the session is read
    out = convert_session(app, p.research_id, **_labels(p))
    return {**out, **save_run(p.output_file, out["run"])}
