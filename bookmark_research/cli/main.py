"""``bookmark-research`` commands. Each one builds an operation's input and renders its output.

Exit codes: 0 ok, 1 error (one line on stderr, or ``{"error", "error_kind"}`` with ``--json``),
2 usage. Imports are deferred so a query starts fast.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from bookmark_research.cli.common import _app, _configure_stdio, _fail, invoke, json_option, renderer
from bookmark_research.cli.wiki import wiki


def _hoist_data_dir(args: list[str]) -> list[str]:
    """Move ``--data-dir DIR`` (or ``--data-dir=DIR``) given after a subcommand to the front, where the
    root group reads it; everything after a ``--`` is left alone."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        if arg == "--data-dir" and i + 1 < len(args):
            front += args[i:i + 2]
            i += 2
            continue
        if arg.startswith("--data-dir="):
            front.append(arg)
        else:
            rest.append(arg)
        i += 1
    return front + rest


class _Root(click.Group):
    """The root group: ``--data-dir`` is accepted before or after the subcommand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _hoist_data_dir(list(args)))


@click.group(cls=_Root, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--data-dir", type=click.Path(file_okay=False), envvar="BOOKMARK_RESEARCH_DATA_DIR",
              help="Where the index and snapshots live (default: $XDG_DATA_HOME/bookmark-research).")
@click.version_option(package_name="bookmark-research")
def cli(data_dir: str | None) -> None:
    """Index, search and research Bookmark Canvas exports, locally."""


class _SyncProgress:
    """A progress bar on stderr while parsing many files (only on a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled, self.bar = enabled, None

    def __call__(self, done: int, total: int, path: str) -> None:
        if not self.enabled or total < 20:
            return
        if self.bar is None:
            self.bar = click.progressbar(length=total, label="Indexing", file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


@cli.command()
@click.argument("package_path", type=click.Path())
@click.option("--source-id", help="Attach to this source (default: remembered from the path).")
@click.option("--mode", type=click.Choice(["snapshot", "live"]), help="snapshot (frozen copy, default) or live.")
@click.option("--completeness", type=click.Choice(["partial", "complete"]),
              help="partial keeps indexed files missing from this input; complete mirrors it.")
@json_option
@click.pass_context
def sync(ctx: click.Context, package_path: str, source_id: str | None, mode: str | None, completeness: str | None,
         as_json: bool) -> None:
    """Import a package folder, .zip export or one section .json."""
    from bookmark_research.cli import render

    app = _app(ctx)
    progress = _SyncProgress(not as_json and sys.stderr.isatty())
    app.progress = progress
    try:
        invoke(ctx, "sync_package", {"package_path": os.path.abspath(os.path.expanduser(package_path)),
                                     "source_id": source_id, "mode": mode, "completeness": completeness},
               as_json, render.sync)
    finally:
        progress.close()


@cli.command()
@click.argument("source_id", required=False)
@json_option
@click.pass_context
def status(ctx: click.Context, source_id: str | None, as_json: bool) -> None:
    """Show sources, counts and sync state."""
    from bookmark_research.cli import render

    invoke(ctx, "index_status", {"source_id": source_id}, as_json, render.status)


@cli.command()
@click.argument("source_id")
@click.option("--limit", type=int, default=20, show_default=True)
@click.option("--offset", type=int, default=0, show_default=True)
@json_option
@click.pass_context
def history(ctx: click.Context, source_id: str, limit: int, offset: int, as_json: bool) -> None:
    """List the recorded versions of a source, newest first."""
    from bookmark_research.cli import render

    invoke(ctx, "source_history", {"source_id": source_id, "limit": limit, "offset": offset}, as_json, render.history)


@cli.command()
@click.argument("source_id")
@click.argument("version_id")
@json_option
@click.pass_context
def restore(ctx: click.Context, source_id: str, version_id: str, as_json: bool) -> None:
    """Make a recorded version of a source current again."""
    from bookmark_research.cli import render

    invoke(ctx, "source_restore", {"source_id": source_id, "version_id": version_id}, as_json, render.sync)


@cli.group()
def source() -> None:
    """Manage sources."""


@source.command("remove")
@click.argument("source_id")
@click.option("--confirm", is_flag=True, help="Actually remove (without it, only preview).")
@json_option
@click.pass_context
def source_remove(ctx: click.Context, source_id: str, confirm: bool, as_json: bool) -> None:
    """Remove a source, its index rows and snapshots (preview first)."""
    from bookmark_research.cli import render

    invoke(ctx, "source_remove", {"source_id": source_id, "confirm": confirm}, as_json, render.remove)


@source.command("merge")
@click.argument("source_id")
@click.argument("into_source_id")
@click.option("--confirm", is_flag=True, help="Actually merge (without it, only preview).")
@json_option
@click.pass_context
def source_merge(ctx: click.Context, source_id: str, into_source_id: str, confirm: bool, as_json: bool) -> None:
    """Fold duplicate SOURCE_ID into INTO_SOURCE_ID (same content; preview first)."""
    from bookmark_research.cli import render

    invoke(ctx, "source_merge", {"source_id": source_id, "into_source_id": into_source_id, "confirm": confirm},
           as_json, render.merge)


@cli.group()
def config() -> None:
    """Show or change settings (BOOKMARK_RESEARCH_CONFIG overrides the file's location)."""


@config.command("show")
@json_option
@click.pass_context
def config_show(ctx: click.Context, as_json: bool) -> None:
    """Show the effective settings; credentials only as set/not set."""
    from bookmark_research.cli import render

    invoke(ctx, "get_settings", {}, as_json, render.settings)


@config.command("set", context_settings={"ignore_unknown_options": True})  # VALUE may be negative: -1
@click.argument("key")
@click.argument("value")
@json_option
@click.pass_context
def config_set(ctx: click.Context, key: str, value: str, as_json: bool) -> None:
    """Set KEY (dotted, e.g. direct.allow_private_networks) to VALUE (JSON or text; null resets)."""
    from bookmark_research.cli import render
    from bookmark_research.config.settings import parse_value

    invoke(ctx, "set_setting", {"key": key, "value": parse_value(value)}, as_json, render.settings)


@cli.command()
@click.argument("source_id")
@click.argument("query", nargs=-1)
@click.option("--target", "-t", "targets", multiple=True, help="A query of its own (repeatable); terms are ANDed.")
@click.option("--section", help="Section id, label, slot or file path.")
@click.option("--group", "group_id", help="Group id or unique label.")
@click.option("--folder", "folder_id", help="Folder item id (its subtree).")
@click.option("--tag", "tags", multiple=True, help="Tag text that must be present (repeatable).")
@click.option("--tag-color", "tag_colors", multiple=True, help="Tag colour that must be present (repeatable).")
@click.option("--item-type", "item_types", multiple=True, type=click.Choice(["bookmark", "folder"]))
@click.option("--limit", type=int, default=20, show_default=True)
@click.option("--offset", type=int, default=0, show_default=True)
@click.option("--count-only", is_flag=True, help="Only totals.")
@click.option("--order", type=click.Choice(["relevance", "tree"]), default="relevance", show_default=True)
@click.option("--no-refresh", is_flag=True, help="Live sources: read the last index without checking the folder.")
@click.option("--content", is_flag=True, help="Match the archived text of the bookmarked pages (see fetch-web).")
@click.option("--compact", is_flag=True, help="JSON with each row once in a shared map (implies --json).")
@json_option
@click.pass_context
def search(ctx: click.Context, source_id: str, query: tuple[str, ...], targets: tuple[str, ...], section: str | None,
           group_id: str | None, folder_id: str | None, tags: tuple[str, ...], tag_colors: tuple[str, ...],
           item_types: tuple[str, ...], limit: int, offset: int, count_only: bool, order: str, no_refresh: bool,
           content: bool, compact: bool, as_json: bool) -> None:
    """Search a source's bookmarks (QUERY words form one target)."""
    all_targets = ([" ".join(query)] if query else []) + list(targets)
    invoke(ctx, "search_bookmarks", {
        "source_id": source_id, "targets": all_targets, "section": section, "group_id": group_id,
        "folder_id": folder_id, "tags": list(tags), "tag_colors": list(tag_colors),
        "item_types": list(item_types) or None, "limit": limit, "offset": offset, "count_only": count_only,
        "order": order, "refresh": not no_refresh, "content": content, "compact": compact}, as_json or compact,
        renderer("search"))


@cli.command("fetch-web")
@click.argument("urls", nargs=-1, required=True)
@click.option("--provider", help="Exactly one attempt with this provider (default: the fetch waterfall).")
@click.option("--max-characters", type=int, help="Characters of text to return per page (100-100000).")
@click.option("--raw", is_flag=True, help="Include the providers' raw responses.")
@click.option("--no-archive", is_flag=True, help="Do not keep the pages in the evidence archive.")
@json_option
@click.pass_context
def fetch_web(ctx: click.Context, urls: tuple[str, ...], provider: str | None, max_characters: int | None, raw: bool,
              no_archive: bool, as_json: bool) -> None:
    """Read pages through the provider waterfall and archive what was read."""
    from bookmark_research.cli import render

    invoke(ctx, "fetch_web", {"urls": list(urls), "provider": provider, "max_characters": max_characters,
                              "raw": raw, "archive": False if no_archive else None}, as_json, render.fetched)


@cli.command("search-web")
@click.option("--target", "-t", "targets", multiple=True, required=True, help="A query (repeatable).")
@click.option("--provider", "providers", multiple=True, type=click.Choice(["exa", "parallel", "tavily", "jina"]),
              help="Only these providers, no fallback (repeatable).")
@click.option("--limit", type=int, help="Results per target (1-20; default from settings).")
@json_option
@click.pass_context
def search_web(ctx: click.Context, targets: tuple[str, ...], providers: tuple[str, ...], limit: int | None,
               as_json: bool) -> None:
    """Search the web through the configured providers; results fused per target."""
    from bookmark_research.cli import render

    invoke(ctx, "search_web", {"targets": [{"target": t, "query": t} for t in targets],
                               "providers": list(providers) or None, "limit_per_target": limit}, as_json,
           render.web_results)


@cli.command("literature")
@click.argument("query")
@click.option("--provider", "providers", multiple=True,
              type=click.Choice(["openalex", "semantic_scholar", "crossref", "pubmed", "arxiv"]))
@click.option("--mode", type=click.Choice(["auto", "topic", "title", "doi", "review", "systematic_review"]),
              default="auto", show_default=True)
@click.option("--limit", "total_limit", type=int, default=100, show_default=True, help="Records after dedupe.")
@click.option("--per-provider-limit", type=int)
@click.option("--from-year", type=int)
@click.option("--to-year", type=int)
@json_option
@click.pass_context
def literature(ctx: click.Context, query: str, providers: tuple[str, ...], mode: str, total_limit: int,
               per_provider_limit: int | None, from_year: int | None, to_year: int | None, as_json: bool) -> None:
    """Search scholarly literature (deduplicated by DOI, then title + year)."""
    from bookmark_research.cli import render

    invoke(ctx, "literature_search", {"query": query, "providers": list(providers) or None, "mode": mode,
                                      "total_limit": total_limit, "per_provider_limit": per_provider_limit,
                                      "from_year": from_year, "to_year": to_year}, as_json, render.literature)


@cli.command("search-plan")
@click.argument("query")
@click.option("--platform")
@click.option("--native-tool", "native_search_tools", multiple=True, help="A search tool the host agent has.")
@click.option("--include-working-papers", is_flag=True)
@click.option("--from-year", type=int)
@click.option("--to-year", type=int)
@click.option("--offline", is_flag=True)
@json_option
@click.pass_context
def search_plan_cmd(ctx: click.Context, query: str, platform: str | None, native_search_tools: tuple[str, ...],
                    include_working_papers: bool, from_year: int | None, to_year: int | None, offline: bool,
                    as_json: bool) -> None:
    """Plan provider and native searches for a question, without running any."""
    from bookmark_research.cli import render

    invoke(ctx, "search_plan", {"query": query, "platform": platform,
                                "native_search_available": bool(native_search_tools),
                                "native_search_tools": list(native_search_tools),
                                "include_working_papers": include_working_papers, "from_year": from_year,
                                "to_year": to_year, "offline": offline}, as_json, render.search_plan)


@cli.command("providers")
@click.option("--probe", is_flag=True, help="Contact the remote MCP providers and list their tools.")
@json_option
@click.pass_context
def providers_cmd(ctx: click.Context, probe: bool, as_json: bool) -> None:
    """List providers, what they can do and which credentials are configured."""
    from bookmark_research.cli import render

    invoke(ctx, "search_providers", {"probe": probe}, as_json, render.providers)


@cli.command("search-archive")
@click.argument("query")
@click.option("--url", help="Only pages fetched from URLs containing this text.")
@click.option("--limit", type=int, default=10, show_default=True)
@click.option("--offset", type=int, default=0, show_default=True)
@json_option
@click.pass_context
def search_archive(ctx: click.Context, query: str, url: str | None, limit: int, offset: int, as_json: bool) -> None:
    """Search the text of archived pages (everything fetch-web has read)."""
    from bookmark_research.cli import render

    invoke(ctx, "search_archive", {"query": query, "url": url, "limit": limit, "offset": offset}, as_json,
           render.archive)


@cli.command()
@click.argument("source_id")
@click.option("--section", help="Section id, label, slot or file path.")
@click.option("--group", "group_id", help="Group id or unique label.")
@click.option("--item", "item_id", help="Item id (adds its ancestors).")
@click.option("--no-refresh", is_flag=True, help="Live sources: read the last index without checking the folder.")
@json_option
@click.pass_context
def context(ctx: click.Context, source_id: str, section: str | None, group_id: str | None, item_id: str | None,
            no_refresh: bool, as_json: bool) -> None:
    """Show canvas context: sections, copies, groups, edges, ancestors."""
    invoke(ctx, "get_context", {"source_id": source_id, "section": section, "group_id": group_id,
                                "item_id": item_id, "refresh": not no_refresh}, as_json, renderer("context"))


@cli.command()
@json_option
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Check Python, SQLite FTS5/trigram and the data directory."""
    from bookmark_research.cli import render

    invoke(ctx, "doctor", {}, as_json, render.doctor)


def _timing_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--deletion-grace", type=click.FloatRange(min=0.01), default=5.0, show_default=True,
                      help="Seconds a deletion must persist before it is applied.")(fn)
    return click.option("--debounce", type=click.FloatRange(min=0.01), default=2.0, show_default=True,
                        help="Seconds changes must settle before a live source is re-synced.")(fn)


@cli.command()
@_timing_options
@click.pass_context
def serve(ctx: click.Context, debounce: float, deletion_grace: float) -> None:
    """Run the MCP server on stdio, watching live sources while it runs."""
    from bookmark_research.mcp.server import serve as run_server
    from bookmark_research.sources.live import Timing

    run_server(ctx.find_root().params.get("data_dir"), Timing(debounce, deletion_grace))


@cli.command()
@click.argument("sources", nargs=-1)
@_timing_options
@json_option
@click.pass_context
def watch(ctx: click.Context, sources: tuple[str, ...], debounce: float, deletion_grace: float, as_json: bool) -> None:
    """Follow live sources by filesystem events until Ctrl-C; one line per state change."""
    import signal
    import threading

    from bookmark_research.errors import BookmarkResearchError
    from bookmark_research.sources.live import Timing
    from bookmark_research.sources.watcher import SourceWatcher

    def report(event: dict[str, Any]) -> None:
        if as_json:
            click.echo(json.dumps(event, ensure_ascii=False), nl=True)
        else:
            extra = f" ({event['error']})" if event.get("error") else ""
            pending = f" pending: {', '.join(event['pending_files'][:3])}" if event.get("pending_files") else ""
            done = (f" +{event['items_inserted']} ~{event['items_updated']} -{event['items_deleted']} items"
                    if event.get("performed") else "")
            click.echo(f"{event['source_id']}: {event['state']}{done}{pending}{extra}")
        sys.stdout.flush()

    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):  # also when started in the background (SIGINT ignored)
        signal.signal(signum, lambda *_: stop.set())
    try:
        watcher = SourceWatcher(ctx.find_root().params.get("data_dir"), Timing(debounce, deletion_grace),
                                list(sources), report)
        if sources:
            from bookmark_research.index.status import require_source

            conn = watcher.app.connect(create=False)
            for sid in sources:
                require_source(conn, sid)
        watcher.start()
    except BookmarkResearchError as exc:
        _fail(exc.message, exc.kind, as_json)
    if not watcher.roots:
        click.echo("note: no live sources yet; waiting for one (sync a folder with --mode live)", err=True)
    try:
        if as_json:
            click.echo(json.dumps({"event": "watching", **watcher.status()}))
        else:
            count = len(watcher.roots)
            click.echo(f"Watching {count} live source{'' if count == 1 else 's'}; Ctrl-C to stop.")
        sys.stdout.flush()
        stop.wait()
    finally:
        watcher.stop()
        if as_json:
            click.echo(json.dumps({"event": "stopped"}))


@cli.command()
@click.option("--package", "package_path", type=click.Path(exists=True),
              help="Package to demo (default: the bundled English sample in fixtures/).")
@click.option("--keep", is_flag=True, help="Keep the temporary data directory and print its path.")
def demo(package_path: str | None, keep: bool) -> None:
    """Sync the bundled sample into a temporary data dir, then search it and show its context."""
    from bookmark_research.demo import run_demo

    sys.exit(run_demo(package_path, keep))


from bookmark_research.cli.research import research  # noqa: E402  (the research command group)

cli.add_command(research)

from bookmark_research.cli.evaluate import evaluate as _evaluate  # noqa: E402

cli.add_command(_evaluate)
cli.add_command(wiki)


def main() -> None:
    _configure_stdio()
    try:
        cli.main(prog_name="bookmark-research", standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("error: interrupted", err=True)
        sys.exit(130)
