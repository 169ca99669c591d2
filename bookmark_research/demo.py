"""``bookmark-research demo``: the main job on the bundled sample, offline, in a throwaway data dir."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import click

SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "sample-en"


def _step(title: str, command: str) -> None:
    click.echo("")
    click.secho(f"── {title}", bold=True)
    click.secho(f"$ bookmark-research {command}", dim=True)


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
                click.echo(f"  {t['target']!r}: {t['total']} instance(s), {t['unique_urls']} unique URL(s)")

            _step("Copies are views, never counted twice", "search demo --section B --count-only")
            copy = run(app, "search_bookmarks", {"source_id": "demo", "section": "B",
                                                  "count_only": True}).model_dump(mode="json")
            click.echo(f"  section B shows {copy['total']} bookmarks of {list(copy['anchor_of'].values())[0]}; "
                       f"the source holds {synced['counts']['bookmarks']} instances in all")

            _step("Canvas context of a group: nested groups, members, directed edges", "context demo --group 'Rust runtimes'")
            render.context(run(app, "get_context", {"source_id": "demo", "group_id": "Rust runtimes"}).model_dump(mode="json"))
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
