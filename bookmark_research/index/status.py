"""Counts and lookups shared by status, search and context."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from bookmark_research.errors import NotFoundError

COUNT_NOTE = (
    "instances count bookmark items (the same URL in two sections is two instances); copy anchors add none; "
    "unique_urls and folders are separate numbers"
)


def source_counts(conn: sqlite3.Connection, source_id: str) -> dict[str, int]:
    """The source's counts: as stored by its last sync (see :func:`store_counts`), else counted now."""
    row = conn.execute("SELECT counts_json FROM source_stats WHERE source_id=?", (source_id,)).fetchone()
    return json.loads(row[0]) if row else count_source(conn, source_id)


def count_source(conn: sqlite3.Connection, source_id: str) -> dict[str, int]:
    """Count items (one scan; unique URLs by their 64-bit key), sections, files and canvas rows."""
    items, bookmarks, folders, roots, unique_urls = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(item_type='bookmark'), 0), COALESCE(SUM(item_type='folder'), 0), "
        "COALESCE(SUM(synthetic), 0), COUNT(DISTINCT CASE WHEN item_type='bookmark' THEN url_hash END) "
        "FROM items WHERE source_id=?", (source_id,)).fetchone()

    def count(table: str) -> int:
        return conn.execute(f"SELECT COUNT(*) FROM {table} WHERE source_id=?", (source_id,)).fetchone()[0]

    return {
        "items": items, "bookmarks": bookmarks, "folders": folders, "tree_roots": roots,
        "user_folders": folders - roots, "unique_urls": unique_urls, "sections": count("sections"),
        "files": count("files"), "nodes": count("nodes"), "edges": count("edges"), "memberships": count("memberships"),
    }


def store_counts(conn: sqlite3.Connection, source_id: str, changed: bool) -> dict[str, int]:
    """After a sync (inside its transaction): count again if it ``changed`` anything, and keep the counts.

    A sync that changed nothing reuses the stored counts, so a no-op re-sync does not scan the items.
    """
    if not changed:
        row = conn.execute("SELECT counts_json FROM source_stats WHERE source_id=?", (source_id,)).fetchone()
        if row:
            return json.loads(row[0])
    counts = count_source(conn, source_id)
    conn.execute("INSERT OR REPLACE INTO source_stats (source_id, counts_json) VALUES (?, ?)",
                 (source_id, json.dumps(counts)))
    return counts


def require_source(conn: sqlite3.Connection | None, source_id: str) -> sqlite3.Row | tuple:
    row = None
    if conn is not None:
        row = conn.execute("SELECT * FROM sources WHERE source_id=?", (source_id,)).fetchone()
    if row is None:
        known = [] if conn is None else [r[0] for r in conn.execute("SELECT source_id FROM sources ORDER BY source_id")]
        hint = f"; known sources: {', '.join(known[:10])}" if known else "; run 'bookmark-research sync PATH' first"
        raise NotFoundError(f"unknown source_id {source_id!r}{hint}")
    return row


def source_record(conn: sqlite3.Connection, source_id: str) -> dict[str, Any]:
    """The lifecycle view of a source (mode, state, versions, paths)."""
    from pathlib import Path

    cur = conn.execute("SELECT * FROM sources WHERE source_id=?", (source_id,))
    row = cur.fetchone()
    if row is None:
        raise NotFoundError(f"unknown source_id {source_id!r}")
    rec = dict(zip([d[0] for d in cur.description], row))
    aliases = [r[0] for r in conn.execute(
        "SELECT input_path FROM source_aliases WHERE source_id=? ORDER BY input_path", (source_id,))]
    snapshot = conn.execute(
        "SELECT snapshot_path FROM source_versions WHERE source_id=? AND version_id=?",
        (source_id, rec["version_id"])).fetchone()
    snapshot_path = snapshot[0] + "/package" if snapshot else None
    extra = json.loads(rec.pop("record_json") or "{}")
    return {
        "source_id": source_id,
        "mode": rec["mode"],
        "completeness": rec["completeness"],
        "state": rec["state"],
        "input_path": rec["input_path"],
        "input_kind": rec["input_kind"],
        "input_exists": bool(rec["input_path"]) and Path(rec["input_path"]).exists(),
        "package_path": rec["package_path"],
        "version_id": rec["version_id"],
        "snapshot_path": snapshot_path,
        "snapshot_exists": bool(snapshot_path) and Path(snapshot_path).is_dir(),
        "created_at": rec["created_at"],
        "last_sync": rec["last_sync"],
        "retained_missing_files": json.loads(rec["retained_missing_json"]),
        "aliases": aliases,
        "pending_files": extra.get("pending_files") or [],
        "pending_since": extra.get("pending_since"),
        "error": extra.get("error"),
        "checked_at": extra.get("checked_at"),
    }
