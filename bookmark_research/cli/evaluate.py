"""``bookmark-research evaluate``: score research runs, and turn a research session into a run record.

``evaluate SUITE RUNS [--judgments FILE] [--output DIR]`` reads JSON files (one of them may be ``-``
for stdin): SUITE is the suite object; RUNS a list of run records or ``{"runs": [...]}``; the
judgments file a list or ``{"judgments": [...]}``. ``evaluate run-from-session RESEARCH_ID ...`` writes
the run record of a finished research session.
"""

from __future__ import annotations

import os
from typing import Any

import click

from bookmark_research.cli.common import _fail, invoke, json_option, read_json_value


class _EvaluateGroup(click.Group):
    """Runs ``score`` when the first argument is not a subcommand, so ``evaluate SUITE RUNS`` works."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["score", *args]
        return super().parse_args(ctx, args)


class _DefaultContext(click.Context):
    """The context of the default subcommand: its usage and help hints read ``evaluate [OPTIONS] SUITE RUNS``
    (the documented form), not the name of the hidden ``score`` command."""

    @property
    def command_path(self) -> str:
        return self.parent.command_path if self.parent is not None else super().command_path


class _DefaultCommand(click.Command):
    context_class = _DefaultContext


@click.group(cls=_EvaluateGroup, subcommand_metavar="SUITE RUNS [--judgments FILE] [--output DIR] [--json] | "
                                                    "run-from-session RESEARCH_ID ...")
def evaluate() -> None:
    """Score research runs from labels: evaluate SUITE RUNS [--judgments FILE] [--output DIR].

    \b
    SUITE      JSON object: schema_version 1, suite_id, kind, tasks, rubric
    RUNS       JSON list of run records, or {"runs": [...]}
    --judgments  JSON list of judgments, or {"judgments": [...]}
    One of the three may be "-" to read it from stdin.

    No model or provider is called and no label is invented: a missing annotation leaves its metric
    null. Also: "evaluate run-from-session RESEARCH_ID ..." writes a run record from a finished
    research session.
    """


def _unwrap(value: Any, key: str, source: str, as_json: bool) -> Any:
    if isinstance(value, dict) and set(value) == {key}:
        value = value[key]
    if isinstance(value, list):
        if not value and key == "runs":  # the file is what the user named: say it, not the operation's field
            _fail(f"{source}: holds no runs; give at least one run record", "invalid_input", as_json)
        return value
    _fail(f"{source}: top level must be a JSON list of {key} or an object {{\"{key}\": [...]}}", "invalid_input",
          as_json)


@evaluate.command("score", cls=_DefaultCommand, hidden=True)
@click.argument("suite", metavar="SUITE")
@click.argument("runs", metavar="RUNS")
@click.option("--judgments", "judgments_path", metavar="FILE", help="Judgments (answer matches, citation labels, "
              "report scores): a JSON list or {\"judgments\": [...]}.")
@click.option("--output", "output_dir", metavar="DIR", help="Also write evaluation.json and evaluation.md here.")
@json_option
@click.pass_context
def score(ctx: click.Context, suite: str, runs: str, judgments_path: str | None, output_dir: str | None,
          as_json: bool) -> None:
    """Score research runs: evaluate SUITE RUNS [--judgments FILE] [--output DIR]."""
    if [suite, runs, judgments_path].count("-") > 1:
        raise click.UsageError("only one of SUITE, RUNS and --judgments can be read from stdin (-)")
    suite_value = read_json_value(suite, as_json)
    if not isinstance(suite_value, dict):
        _fail(f"{'stdin' if suite == '-' else suite}: top level must be the suite JSON object", "invalid_input",
              as_json)
    arguments: dict[str, Any] = {
        "suite": suite_value,
        "runs": _unwrap(read_json_value(runs, as_json), "runs", "stdin" if runs == "-" else runs, as_json),
    }
    if judgments_path is not None:
        source = "stdin" if judgments_path == "-" else judgments_path
        arguments["judgments"] = _unwrap(read_json_value(judgments_path, as_json), "judgments", source, as_json)
    if output_dir is not None:
        arguments["output"] = os.path.abspath(os.path.expanduser(output_dir))
    invoke(ctx, "evaluate_research", arguments, as_json, render_evaluation, from_file=True)


@evaluate.command("run-from-session")
@click.argument("research_id")
@click.option("--system-id", required=True, help="The system that ran the session (agent or prompt setup).")
@click.option("--mode", required=True, help="Its mode, e.g. direct or workflow.")
@click.option("--comparison-group", required=True, help="Runs meant to be compared share a comparison group.")
@click.option("--task-id", help="The suite task this run answers (default: the research id).")
@click.option("--run-id", help="The run id (default: the research id).")
@click.option("--repeat", type=click.IntRange(1, 100_000), default=1, show_default=True,
              help="Repeat number under the same conditions.")
@click.option("--model", help="The model that ran the session (a declared control).")
@click.option("--time-window", help="The retrieval time window (a declared control).")
@click.option("--harness-version", help="The harness version (default: this bookmark-research version).")
@click.option("--output", "output_file", metavar="FILE",
              help="Add the run to this runs file (a JSON list; a run with the same run_id is replaced).")
@json_option
@click.pass_context
def run_from_session(ctx: click.Context, research_id: str, output_file: str | None, as_json: bool,
                     **labels: Any) -> None:
    """Write the evaluation run record of a finished research session.

    Answers, claims, citations (source ids, URLs, quotes), coverage as frozen inventory ids, budget and
    usage as controls, latency from start to finish. Prints the run (and a suite task whose
    scope_source_ids are the session's inventory ids; its gold answers are left for you to write).
    """
    arguments = {"research_id": research_id, **labels}
    if output_file is not None:
        arguments["output"] = os.path.abspath(os.path.expanduser(output_file))
    invoke(ctx, "evaluation_run_from_session", arguments, as_json, render_run)


# --- human output ------------------------------------------------------------------------------------


def render_evaluation(result: dict[str, Any]) -> None:
    """A table per group (system × mode rows, headline metrics as mean ± sd), then what was not scored."""
    from bookmark_research.cli.render import _table
    from bookmark_research.evaluation.report import HEADLINE, comparability_line, stat_cell

    short = {"answer_f1": "F1", "semantic_citation_accuracy": "cite acc", "semantic_claim_support": "claim sup",
             "report_quality_normalized": "report", "text_coverage": "text cov", "questions_coverage": "q cov",
             "latency_seconds": "latency s"}
    kind = result["kind"].replace("_", " ")
    click.echo(click.style(f"Evaluation of {result['suite_id']}", bold=True)
               + f" ({kind}): {_plural(result['run_count'], 'run')}, {result['evaluated_task_count']} of "
                 f"{_plural(result['task_count'], 'task')}, {_plural(result['judgment_count'], 'judgment')}, {_plural(len(result['groups']), 'group')}")
    for group in result["groups"]:
        click.echo("")
        click.echo(click.style(f"task {group['task_id']} · group {group['comparison_group']}", bold=True))
        click.echo(comparability_line(group))
        rows = []
        for s in group["strata"]:
            runs = str(s["run_count"]) + (f" ({s['failed_runs']} failed)" if s["failed_runs"] else "")
            cells = [stat_cell(s["metrics"][m], m, with_n=False)
                     + ("" if s["metrics"][m]["n"] in (0, s["run_count"]) else f" n={s['metrics'][m]['n']}")
                     for m in HEADLINE]
            rows.append([s["system_id"], s["mode"], s["condition_id"][:8], runs, *cells])
        _table(rows, ["system", "mode", "condition", "runs", *(short[m] for m in HEADLINE)])
    if result["not_scored"]:
        click.echo("")
        click.echo(click.style("Not scored", bold=True))
        for entry in result["not_scored"]:
            click.echo(f"  {entry['run_id']}: " + "; ".join(entry["reasons"]))
    click.echo("")
    click.echo(result["limitations"][0])
    if result["artifacts"]:
        click.echo(f"Wrote {result['artifacts']['json']} and {result['artifacts']['markdown']}")
    else:
        click.echo("Every metric and limitation: --json, or --output DIR for evaluation.json and evaluation.md.")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def render_run(result: dict[str, Any]) -> None:
    """The run record as JSON (what goes into a runs file), its notes and where it was written."""
    import json

    run = result["run"]
    if result["output_file"]:
        verb = "Replaced" if result["replaced"] else "Added"
        click.echo(f"{verb} run {run['run_id']} in {result['output_file']} ({_plural(result['run_count'], 'run')})")
    else:
        click.echo(json.dumps(run, ensure_ascii=False, indent=2))
    cov = run["coverage"]
    click.echo(f"research {result['research_id']}: {_plural(len(run['answers']), 'answer')}, "
               f"{_plural(len(run['claims']), 'claim')}, {_plural(len(run['citations']), 'citation')}; inventory ids accounted {len(cov['accounted_source_ids'])}, "
               f"with text {len(cov['text_source_ids'])}, reviewed {len(cov['reviewed_source_ids'])} of "
               f"{len(result['task']['scope_source_ids'])}", err=True)
    for note in result["notes"]:
        click.echo(f"note: {note}", err=True)
    click.echo("Suite task for this run (gold_answers left null for you to write): --json prints it.", err=True)
