"""The floor a sync is measured against: json-parse every file, bulk-insert one FTS5 row per item."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path


def _walk(nodes: list, rows: list, path: str) -> None:
    for node in nodes:
        if not isinstance(node, dict):
            continue
        rows.append((node.get("title", ""), node.get("url", ""), node.get("note", ""), path))
        children = node.get("children")
        if children:
            _walk(children, rows, f"{path} / {node.get('title', '')}" if path else node.get("title", ""))


def floor_seconds(package: Path, db_path: Path) -> float:
    """Seconds to parse every JSON/.canvas file and insert one row per item into a fresh FTS5 table."""
    db_path.unlink(missing_ok=True)
    start = time.perf_counter()
    rows: list[tuple[str, str, str, str]] = []
    for file in sorted(package.rglob("*")):
        if file.suffix not in (".json", ".canvas"):
            continue
        data = json.loads(file.read_bytes())
        tree = data.get("tree")
        _walk([tree] if isinstance(tree, dict) else (tree or data.get("items") or []), rows, "")
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE VIRTUAL TABLE items USING fts5(title, url, note, folder_path)")
    with conn:
        conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?)", rows)
    conn.close()
    return time.perf_counter() - start
