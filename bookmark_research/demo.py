"""``bookmark-research demo``: the main job on the bundled sample, offline, in a throwaway data dir."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from bookmark_research.core.app import App

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SAMPLE = FIXTURES / "sample-en"
PAGES = FIXTURES / "pages"


def _step(title: str, command: str) -> None:
    click.echo("")
    click.secho(f"── {title}", bold=True)
    click.secho(f"$ bookmark-research {command}", dim=True)


def _evidence_steps(app: App, data_dir: Path) -> None:
    """Read pages with the keyless direct fetcher from a local web server, search them, then a research session."""
    import functools
    import os
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    from bookmark_research.cli import render
    from bookmark_research.config.settings import update
    from bookmark_research.core.registry import run
    from bookmark_research.demo_research import research_steps

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(PAGES)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    previous = os.environ.get("BOOKMARK_RESEARCH_CONFIG")
    os.environ["BOOKMARK_RESEARCH_CONFIG"] = str(data_dir / "settings.json")  # the demo's own settings
    try:
        # The demo's pages are served from this machine, which direct fetching refuses by default.
        update({"direct.allow_private_networks": True, "direct.min_interval_seconds": 0}, terminal=True)
        base = f"http://127.0.0.1:{server.server_address[1]}"
        _step("Read pages with the keyless direct fetcher (a local web server stands in for the web)",
              f"fetch-web {base}/tokio-tutorial.html {base}/bm25.html --provider direct")
        fetched = run(app, "fetch_web", {"urls": [f"{base}/tokio-tutorial.html", f"{base}/bm25.html"],
                                         "provider": "direct"}).model_dump(mode="json")
        render.fetched(fetched)
        _step("Everything read is archived and searchable by what the pages say", "search-archive 'work-stealing scheduler'")
        render.archive(run(app, "search_archive", {"query": "work-stealing scheduler"}).model_dump(mode="json"))
        if (PAGES / "urls.json").exists():
            rid = research_steps(app, data_dir, SAMPLE, PAGES, base)
            from bookmark_research.demo_wiki import wiki_steps

            wiki_steps(app, rid)
    finally:
        server.shutdown()
        server.server_close()
        if previous is None:
            os.environ.pop("BOOKMARK_RESEARCH_CONFIG", None)
        else:
            os.environ["BOOKMARK_RESEARCH_CONFIG"] = previous


def run_demo(package_path: str | None = None, keep: bool = False) -> int:
    from bookmark_research.cli import render
    from bookmark_research.core.app import App
    from bookmark_research.core.registry import run
    from bookmark_research.errors import BookmarkResearchError

    package = Path(package_path) if package_path else SAMPLE
    if not package.exists():
        click.echo(f"error: sample package not found at {package}; run the demo from a clone of the repository "
                   "or pass --package PATH", err=True)
        return 1
    data_dir = Path(tempfile.mkdtemp(prefix="bookmark-research-demo-"))
    try:
        with App(data_dir) as app:
            _step("Sync the sample package into a temporary data dir", f"sync {package} --source-id demo")
            synced = run(app, "sync_package", {"package_path": str(package), "source_id": "demo",
                                               "mode": "snapshot"}).model_dump(mode="json")
            render.sync(synced)

            _step("Ranked full-text search (BM25, title weighted)", "search demo async")
            render.search(run(app, "search_bookmarks", {"source_id": "demo", "targets": ["async"],
                                                        "limit": 5}).model_dump(mode="json"))

            _step("Several targets at once, each with its own total", "search demo -t tokio -t bm25 -t to-read --count-only")
            result = run(app, "search_bookmarks", {"source_id": "demo", "targets": ["tokio", "bm25", "to-read"],
                                                    "count_only": True}).model_dump(mode="json")
            for t in result["targets"]:
                click.echo(f"  {t['target']!r}: {t['total']} instance{'' if t['total'] == 1 else 's'}, "
                           f"{t['unique_urls']} unique URL{'' if t['unique_urls'] == 1 else 's'}")

            _step("Copies are views, never counted twice", "search demo --section B --count-only")
            copy = run(app, "search_bookmarks", {"source_id": "demo", "section": "B",
                                                  "count_only": True}).model_dump(mode="json")
            click.echo(f"  section B shows {copy['total']} bookmarks of {list(copy['anchor_of'].values())[0]}; "
                       f"the source holds {synced['counts']['bookmarks']} instances in all")

            _step("Canvas context of a group: nested groups, members, directed edges", "context demo --group 'Rust runtimes'")
            render.context(run(app, "get_context", {"source_id": "demo", "group_id": "Rust runtimes"}).model_dump(mode="json"))

            if PAGES.is_dir():
                _evidence_steps(app, data_dir)
                if not keep:
                    click.echo("  (the demo's data directory is removed at the end; run 'bookmark-research demo "
                               "--keep' to keep the session and its report)")
    except BookmarkResearchError as exc:
        click.echo(f"error: {exc.message}", err=True)
        return 1
    finally:
        if keep:
            click.echo(f"\nData kept in {data_dir} (use --data-dir {data_dir} to explore it)")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    click.echo("")
    click.echo("Next: bookmark-research sync YOUR-EXPORT.zip, then bookmark-research search SOURCE words…")
    return 0
