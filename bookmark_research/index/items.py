"""Write one section's items: insert new, update changed (revision + 1), delete missing.

Item identity is ``(source_id, section_id, item_id)``; its integer ``pk`` never changes while that
key persists. Only content changes bump ``revision``; a shifted position or preorder is updated in
place without touching the full-text indexes.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass

from bookmark_research.canvas.sections import ItemRow, ParsedSection
from bookmark_research.canvas.strictjson import dumps

_COLUMNS = (
    "pk, source_id, section_id, item_id, parent_id, item_type, position, preorder, subtree_end, depth, title, url, "
    "note, note_color, tags_json, tag_text, path_json, folder_path, ancestor_ids_json, raw_json, metadata_json, "
    "synthetic, content_hash, revision"
)
_INSERT = f"INSERT INTO items ({_COLUMNS}) VALUES ({', '.join('?' * len(_COLUMNS.split(', ')))})"
_UPDATE = (
    "UPDATE items SET parent_id=?, item_type=?, position=?, preorder=?, subtree_end=?, depth=?, title=?, url=?, "
    "note=?, note_color=?, tags_json=?, tag_text=?, path_json=?, folder_path=?, ancestor_ids_json=?, raw_json=?, "
    "metadata_json=?, synthetic=?, content_hash=?, revision=revision+1 WHERE pk=?"
)
_REORDER = "UPDATE items SET position=?, preorder=?, subtree_end=?, depth=? WHERE pk=?"


@dataclass
class ItemCounts:
    inserted: int = 0
    updated: int = 0
    deleted: int = 0


class _JsonCache:
    """Siblings share their ancestor lists; serialise each list once."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[list[str], str]] = {}

    def __call__(self, value: list[str]) -> str:
        hit = self._cache.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        text = dumps(value)
        self._cache[id(value)] = (value, text)
        return text


def _values(row: ItemRow, path_json: _JsonCache, ancestors_json: _JsonCache) -> tuple:
    tags_json = dumps(row.tags) if row.tags else "[]"
    tag_text = "\n".join(str(t.get("text", "")) for t in row.tags)
    raw_json = dumps(row.raw)
    metadata_json = dumps(row.metadata) if row.metadata else "{}"
    p_json = path_json(row.path)
    a_json = ancestors_json(row.ancestor_ids)
    folder_path = " / ".join(row.path)
    content = "\x1f".join((
        row.parent_id if row.parent_id is not None else "\x1e", row.item_type, row.title, row.url, row.note,
        row.note_color or "\x1e", tags_json, p_json, a_json, raw_json, metadata_json, "1" if row.synthetic else "0",
    ))
    digest = hashlib.sha1(content.encode("utf-8", "surrogatepass")).hexdigest()
    return (row.parent_id, row.item_type, row.position, row.preorder, row.subtree_end, row.depth, row.title, row.url,
            row.note, row.note_color, tags_json, tag_text, p_json, folder_path, a_json, raw_json, metadata_json,
            1 if row.synthetic else 0, digest)


def write_items(conn: sqlite3.Connection, source_id: str, section: ParsedSection) -> ItemCounts:
    counts = ItemCounts()
    existing = {
        item_id: (pk, digest, pos, pre, end, depth)
        for item_id, pk, digest, pos, pre, end, depth in conn.execute(
            "SELECT item_id, pk, content_hash, position, preorder, subtree_end, depth FROM items "
            "WHERE source_id=? AND section_id=?",
            (source_id, section.section_id),
        )
    }
    next_pk = conn.execute("SELECT COALESCE(MAX(pk), 0) FROM items").fetchone()[0] + 1
    path_json, ancestors_json = _JsonCache(), _JsonCache()
    inserts, updates, reorders, tag_rows, retag = [], [], [], [], []
    seen: set[str] = set()
    sid = section.section_id
    for row in section.items:
        seen.add(row.item_id)
        values = _values(row, path_json, ancestors_json)
        old = existing.get(row.item_id)
        if old is None:
            pk = next_pk
            next_pk += 1
            inserts.append((pk, source_id, sid, row.item_id, *values, 1))
        else:
            pk = old[0]
            if old[1] != values[-1]:
                updates.append((*values, pk))
                retag.append((pk,))
            elif old[2:] != (row.position, row.preorder, row.subtree_end, row.depth):
                reorders.append((row.position, row.preorder, row.subtree_end, row.depth, pk))
                continue
            else:
                continue
        for position, tag in enumerate(row.tags):
            tag_rows.append((pk, position, str(tag.get("color", "")), str(tag.get("text", ""))))
    gone = [(existing[item_id][0],) for item_id in existing.keys() - seen]
    if gone:
        conn.executemany("DELETE FROM items WHERE pk=?", gone)
    if retag:
        conn.executemany("DELETE FROM item_tags WHERE item_pk=?", retag)
    if inserts:
        conn.executemany(_INSERT, inserts)
    if updates:
        conn.executemany(_UPDATE, updates)
    if reorders:
        conn.executemany(_REORDER, reorders)
    if tag_rows:
        conn.executemany("INSERT OR IGNORE INTO item_tags (item_pk, position, color, text) VALUES (?, ?, ?, ?)", tag_rows)
    counts.inserted, counts.updated, counts.deleted = len(inserts), len(updates), len(gone)
    return counts
