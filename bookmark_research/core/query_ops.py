"""The query operations (bookmark search, canvas context), registered with their input and output models.

They live apart from :mod:`operations` so a search or context call imports and builds only their
models (``query_models``), not every operation's.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from bookmark_research.core import query_models as m
from bookmark_research.core.app import App
from bookmark_research.core.registry import operation
from bookmark_research.errors import StaleSourceError
from bookmark_research.index.db import read_snapshot
from bookmark_research.index.status import require_source, source_record


def _query_conn(app: App, source_id: str, refresh: bool) -> tuple[sqlite3.Connection, dict[str, Any]]:
    """The connection for a query, after bringing a live source up to date unless ``refresh`` is false."""
    conn = app.connect(create=False)
    require_source(conn, source_id)
    assert conn is not None
    mode, state = conn.execute("SELECT mode, state FROM sources WHERE source_id=?", (source_id,)).fetchone()
    info: dict[str, Any] = {"requested": refresh, "performed": False, "index_updated": False,
                            "mode": "saved_snapshot", "state": state}
    if mode != "live":
        return conn, info
    if not refresh:
        info["note"] = "refresh=false: the last synchronized index, not checked against the folder"
        return conn, info
    from bookmark_research.sources.live import refresh as check

    result = check(app, source_id, force=True)
    info.update(performed=True, mode="checked_package", state=result["state"], pending_files=result["pending_files"],
                index_updated=bool(result["sync"]))
    if result["state"] in ("error", "unavailable"):
        reason = (result["error"] or result["state"]).removesuffix("; the last good index is kept")
        raise StaleSourceError(f"{reason}; pass --no-refresh (CLI) or refresh=false (MCP) to read the last good index")
    if result["state"] == "pending":
        waiting = ", ".join(result["pending_files"][:5]) or result["error"] or "changes settling"
        info["note"] = f"changes are pending and not in these results yet: {waiting}"
    return conn, info


@operation("search_bookmarks", "search", m.SearchInput, m.SearchOutput, read_only=False, destructive=False,
           idempotent=True)  # may re-sync a live source first
def search_bookmarks(app: App, p: m.SearchInput) -> dict[str, Any]:
    """Ranked full-text search of bookmarks with section, group, folder and tag filters."""
    from bookmark_research.index.search import search_bookmarks as run

    conn, freshness = _query_conn(app, p.source_id, p.refresh)
    with read_snapshot(conn):
        result = run(conn, p.source_id, targets=p.targets, section=p.section, group_id=p.group_id,
                     folder_id=p.folder_id, tags=p.tags, tag_colors=p.tag_colors, item_types=p.item_types,
                     limit=p.limit, offset=p.offset, count_only=p.count_only, order=p.order, content=p.content)
        result["source"] = source_record(conn, p.source_id)
    result["refresh"] = freshness
    if p.compact:
        from bookmark_research.index.search import compact

        compact(result)
    return result


@operation("get_context", "context", m.ContextInput, m.ContextOutput, read_only=False, destructive=False,
           idempotent=True)  # may re-sync a live source first
def get_context(app: App, p: m.ContextInput) -> dict[str, Any]:
    """Canvas context: section headers, copies, ancestors, nodes, groups, edges and related nodes."""
    from bookmark_research.index.context import get_context as run

    conn, freshness = _query_conn(app, p.source_id, p.refresh)
    with read_snapshot(conn):
        result = run(conn, p.source_id, section=p.section, group_id=p.group_id, item_id=p.item_id)
        result["source"] = source_record(conn, p.source_id)
    result["refresh"] = freshness
    return result
