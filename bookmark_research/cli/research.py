"""``bookmark-research research …``: research sessions from the terminal (thin: every command is one operation)."""

from __future__ import annotations

from typing import Any

import click

from bookmark_research.cli.common import _fail, invoke, json_option, read_json_input


def _pairs(values: tuple[str, ...], option: str, as_json: bool) -> list[tuple[str, str]]:
    out = []
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key.strip() or not text.strip():
            _fail(f"{option}: expected ID=TEXT, got {value!r}", "invalid_input", as_json, code=2)
        out.append((key.strip(), text))
    return out


def _merge(base: dict[str, Any], **flags: Any) -> dict[str, Any]:
    """Flags given on the command line override (or add to) the --input JSON object."""
    out = dict(base)
    for key, value in flags.items():
        if value is None or value == () or value == []:
            continue
        out[key] = list(value) if isinstance(value, tuple) else value
    return out


def _input(path: str | None, as_json: bool) -> dict[str, Any]:
    return read_json_input(path, as_json) if path else {}


@click.group()
def research() -> None:
    """Research sessions: frozen bookmark inventories, budgeted evidence, verified claims and a report."""


@research.command("start")
@click.option("--brief", help="The task statement.")
@click.option("--question", "-q", "questions", multiple=True, metavar="ID=TEXT", help="A research question (repeatable).")
@click.option("--scope", help="Free-text scope (stays local).")
@click.option("--source", "source_ids", multiple=True, metavar="SOURCE_ID", help="Indexed source to freeze (repeatable).")
@click.option("--url", "urls", multiple=True, help="A bookmark URL (repeatable; instead of --source).")
@click.option("--urls-file", type=click.File("r", encoding="utf-8"), help="Bookmark URLs, one per line.")
@click.option("--bookmark-ref", "bookmark_refs", multiple=True, nargs=3, metavar="SOURCE SECTION ITEM",
              help="An exact bookmark (repeatable); with --scope-mode subset it narrows the scope.")
@click.option("--scope-mode", type=click.Choice(["whole", "subset"]))
@click.option("--inventory-id", "inventory_ids", multiple=True, help="Subset entry id (with --scope-mode subset).")
@click.option("--budget-search", type=int, help="max_search_calls (0-120, default 16).")
@click.option("--budget-fetch", type=int, help="max_fetch_calls (0-80, default grows with the scope).")
@click.option("--budget-rounds", type=int, help="max_rounds (0-40, default 8).")
@click.option("--provider", "providers", multiple=True, help="Session provider (repeatable; default: settings).")
@click.option("--output-directory", type=click.Path(), help="Absolute folder for this session.")
@click.option("--input", "input_path", metavar="FILE|-", help="research_start arguments as a JSON object.")
@json_option
@click.pass_context
def start(ctx: click.Context, brief: str | None, questions: tuple[str, ...], scope: str | None,
          source_ids: tuple[str, ...], urls: tuple[str, ...], urls_file: Any, bookmark_refs: tuple[tuple[str, str, str], ...],
          scope_mode: str | None, inventory_ids: tuple[str, ...], budget_search: int | None, budget_fetch: int | None,
          budget_rounds: int | None, providers: tuple[str, ...], output_directory: str | None, input_path: str | None,
          as_json: bool) -> None:
    """Start a session over indexed sources (--source), exact bookmarks or a URL list, with questions."""
    from bookmark_research.cli import research_render as render

    args = _input(input_path, as_json)
    url_list = list(urls) + ([line.strip() for line in urls_file if line.strip()] if urls_file else [])
    budget = {k: v for k, v in (("max_search_calls", budget_search), ("max_fetch_calls", budget_fetch),
                                ("max_rounds", budget_rounds)) if v is not None}
    args = _merge(args, brief=brief, scope=scope, source_ids=source_ids, urls=url_list or None, scope_mode=scope_mode,
                  inventory_ids=inventory_ids, providers=providers, output_directory=output_directory,
                  questions=[{"id": k, "question": v} for k, v in _pairs(questions, "--question", as_json)] or None,
                  bookmark_refs=[{"source_id": s, "section_id": sec, "item_id": i} for s, sec, i in bookmark_refs]
                  or None, budget={**args.get("budget", {}), **budget} if budget else None)
    invoke(ctx, "research_start", args, as_json, render.started, from_file=input_path is not None)


@research.command("status")
@click.argument("research_id", required=False)
@click.option("--section", help="Page through one section (questions, claims, sources, operations, ...).")
@click.option("--offset", type=int, default=0, show_default=True)
@click.option("--limit", type=int, default=20, show_default=True)
@json_option
@click.pass_context
def status(ctx: click.Context, research_id: str | None, section: str | None, offset: int, limit: int,
           as_json: bool) -> None:
    """A session's overview (or one section), or the list of sessions."""
    from bookmark_research.cli import research_render as render

    invoke(ctx, "research_status", {"research_id": research_id, "section": section, "offset": offset, "limit": limit},
           as_json, render.status)


@research.command("inventory")
@click.argument("research_id")
@click.option("--inventory-id", "inventory_ids", multiple=True, help="Read these entries (repeatable).")
@click.option("--offset", type=int, default=0, show_default=True)
@click.option("--limit", type=int, default=100, show_default=True)
@json_option
@click.pass_context
def inventory(ctx: click.Context, research_id: str, inventory_ids: tuple[str, ...], offset: int, limit: int,
              as_json: bool) -> None:
    """Page through the frozen inventory of a session."""
    from bookmark_research.cli import research_render as render

    invoke(ctx, "research_inventory", {"research_id": research_id, "inventory_ids": list(inventory_ids) or None,
                                       "offset": offset, "limit": limit}, as_json, render.inventory)


@research.command("search")
@click.argument("research_id")
@click.option("--operation-id", help="Your id for this step (a repeat replays the saved result).")
@click.option("--query", "queries", multiple=True, metavar="QUESTION_ID=QUERY", help="A query for a question.")
@click.option("--kind", type=click.Choice(["web", "scholarly"]), help="web (default) or scholarly.")
@click.option("--provider", "providers", multiple=True, help="Only these providers (repeatable).")
@click.option("--limit", "limit_per_target", type=int, help="Results per query (1-20, default 5).")
@click.option("--from-year", type=int)
@click.option("--to-year", type=int)
@click.option("--input", "input_path", metavar="FILE|-", help="research_search arguments as JSON.")
@json_option
@click.pass_context
def search(ctx: click.Context, research_id: str, operation_id: str | None, queries: tuple[str, ...], kind: str | None,
           providers: tuple[str, ...], limit_per_target: int | None, from_year: int | None, to_year: int | None,
           input_path: str | None, as_json: bool) -> None:
    """Budgeted web or scholarly search for the session's questions."""
    from bookmark_research.cli import research_render as render

    args = _merge(_input(input_path, as_json), research_id=research_id, operation_id=operation_id, kind=kind,
                  providers=providers, limit_per_target=limit_per_target, from_year=from_year, to_year=to_year,
                  queries=[{"question_id": k, "query": v} for k, v in _pairs(queries, "--query", as_json)] or None)
    invoke(ctx, "research_search", args, as_json, render.searched, from_file=input_path is not None)


@research.command("fetch")
@click.argument("research_id")
@click.argument("urls", nargs=-1)
@click.option("--operation-id", help="Your id for this step (a repeat replays the saved result).")
@click.option("--question", "question_id", help="The question these pages are read for.")
@click.option("--provider", help="Only this provider (default: the session's fetch waterfall).")
@click.option("--max-characters", type=int)
@click.option("--no-reuse-archive", is_flag=True, help="Fetch again even if the archive has the page.")
@click.option("--input", "input_path", metavar="FILE|-", help="research_fetch arguments as JSON.")
@json_option
@click.pass_context
def fetch(ctx: click.Context, research_id: str, urls: tuple[str, ...], operation_id: str | None,
          question_id: str | None, provider: str | None, max_characters: int | None, no_reuse_archive: bool,
          input_path: str | None, as_json: bool) -> None:
    """Read up to 8 URLs for a question; each becomes a source."""
    from bookmark_research.cli import research_render as render

    args = _merge(_input(input_path, as_json), research_id=research_id, urls=urls, operation_id=operation_id,
                  question_id=question_id, provider=provider, max_characters=max_characters,
                  reuse_archive=False if no_reuse_archive else None)
    invoke(ctx, "research_fetch", args, as_json, render.fetched, from_file=input_path is not None)


@research.command("source")
@click.argument("research_id")
@click.argument("source_id")
@click.option("--offset", type=int, default=0, show_default=True)
@click.option("--limit", type=int, default=12_000, show_default=True)
@json_option
@click.pass_context
def source(ctx: click.Context, research_id: str, source_id: str, offset: int, limit: int, as_json: bool) -> None:
    """Print a source's saved text (hash-checked), a page at a time."""
    from bookmark_research.cli import research_render as render

    invoke(ctx, "research_source", {"research_id": research_id, "source_id": source_id, "offset": offset,
                                    "limit": limit}, as_json, render.source)


@research.command("import")
@click.argument("research_id")
@click.option("--input", "input_path", required=True, metavar="FILE|-",
              help="JSON: operation_id, question_id, url, text, provenance {kind, ...}, inventory_ids?, title?")
@json_option
@click.pass_context
def import_(ctx: click.Context, research_id: str, input_path: str, as_json: bool) -> None:
    """Import a text the host read itself as a source (no budget)."""
    from bookmark_research.cli import research_render as render

    args = {**_input(input_path, as_json), "research_id": research_id}
    invoke(ctx, "research_import_evidence", args, as_json, render.imported, from_file=True)


@research.command("record")
@click.argument("research_id")
@click.option("--input", "input_path", default="-", show_default=True, metavar="FILE|-",
              help="A bare entry {kind, ...}, or {entry} / {entries, batch_id}.")
@json_option
@click.pass_context
def record(ctx: click.Context, research_id: str, input_path: str, as_json: bool) -> None:
    """Record a claim, answer, gap, review, ... (JSON from a file or stdin)."""
    from bookmark_research.cli import research_render as render

    data = _input(input_path, as_json)
    args = {"entry": data} if "kind" in data else dict(data)
    invoke(ctx, "research_record", {**args, "research_id": research_id}, as_json, render.recorded,
           from_file=True)


@research.command("resume")
@click.argument("research_id")
@click.option("--reason", required=True, help="Why the session goes on (kept in the report).")
@json_option
@click.pass_context
def resume(ctx: click.Context, research_id: str, reason: str, as_json: bool) -> None:
    """Reopen an incomplete session (a resume record); its earlier report is kept."""
    from bookmark_research.cli import research_render as render

    invoke(ctx, "research_record", {"research_id": research_id, "entry": {"kind": "resume", "text": reason}},
           as_json, render.recorded)


@research.command("coverage")
@click.argument("research_id")
@click.option("--filter", "filter_", type=click.Choice(["all", "missing", "unread", "unreviewed", "blocked",
                                                         "excluded", "reviewed"]), default="all", show_default=True)
@click.option("--offset", type=int, default=0, show_default=True)
@click.option("--limit", type=int, default=100, show_default=True)
@json_option
@click.pass_context
def coverage(ctx: click.Context, research_id: str, filter_: str, offset: int, limit: int, as_json: bool) -> None:
    """Coverage of the frozen input, recomputed from the evidence."""
    from bookmark_research.cli import research_render as render

    invoke(ctx, "research_coverage", {"research_id": research_id, "filter": filter_, "offset": offset,
                                      "limit": limit}, as_json, render.coverage)


@research.command("finish")
@click.argument("research_id")
@click.option("--summary", required=True)
@click.option("--status", "status_", type=click.Choice(["completed", "incomplete", "cancelled"]),
              default="completed", show_default=True)
@click.option("--limitation", "limitations", multiple=True, help="A limitation to report (repeatable).")
@json_option
@click.pass_context
def finish(ctx: click.Context, research_id: str, summary: str, status_: str, limitations: tuple[str, ...],
           as_json: bool) -> None:
    """Finish a session and write report.md, sources.json and the coverage file."""
    from bookmark_research.cli import research_render as render

    invoke(ctx, "research_finish", {"research_id": research_id, "summary": summary, "status": status_,
                                    "limitations": list(limitations)}, as_json, render.finished)


@research.command("report")
@click.argument("research_id")
@json_option
@click.pass_context
def report(ctx: click.Context, research_id: str, as_json: bool) -> None:
    """Print a finished session's report.md."""
    from bookmark_research.cli import research_render as render

    invoke(ctx, "research_report", {"research_id": research_id}, as_json, render.report)


@research.command("route")
@click.option("--depth", type=click.Choice(["auto", "quick", "agentic", "deep"]))
@click.option("--host", type=click.Choice(["codex", "claude_code", "pi", "dsh", "unknown"]))
@click.option("--task-shape", type=click.Choice(["lookup", "investigation", "batch_research"]))
@click.option("--tool", "observed_tools", multiple=True, help="A tool the host has (repeatable).")
@click.option("--available-command", "available_commands", multiple=True)
@click.option("--extension", "installed_extensions", multiple=True)
@click.option("--failed-route", "failed_routes", multiple=True)
@click.option("--provider", type=click.Choice(["openai", "parallel"]))
@click.option("--input", "input_path", metavar="FILE|-", help="research_route arguments as JSON.")
@json_option
@click.pass_context
def route(ctx: click.Context, depth: str | None, host: str | None, task_shape: str | None,
          observed_tools: tuple[str, ...], available_commands: tuple[str, ...], installed_extensions: tuple[str, ...],
          failed_routes: tuple[str, ...], provider: str | None, input_path: str | None, as_json: bool) -> None:
    """Advice on how to run a research task here (starts nothing, changes nothing)."""
    from bookmark_research.cli import research_render as render

    args = _merge(_input(input_path, as_json), depth=depth, host=host, task_shape=task_shape,
                  observed_tools=observed_tools, available_commands=available_commands,
                  installed_extensions=installed_extensions, failed_routes=failed_routes, provider=provider)
    invoke(ctx, "research_route", args, as_json, render.route)

