"""Write one section's items: insert new, update changed (revision + 1), delete missing.

Item identity is ``(source_id, section_id, item_id)``; its integer ``pk`` never changes while that
key persists. Only content changes bump ``revision``; a shifted position or preorder is updated in
place without touching the full-text indexes.
"""

from __future__ import annotations

import hashlib
import sqlite3
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from bookmark_research.canvas.sections import ItemRow, ParsedSection
from bookmark_research.canvas.strictjson import dumps
from bookmark_research.index.schema import index_new_items
from bookmark_research.index.text import char_text, url_hash

_COLUMNS = (
    "pk, source_id, section_id, item_id, parent_id, item_type, position, preorder, subtree_end, depth, title, url, "
    "url_hash, note, note_color, tags_json, tag_text, path_json, folder_path, extra_json, metadata_json, "
    "synthetic, content_hash, revision"
)
_INSERT = f"INSERT INTO items ({_COLUMNS}) VALUES ({', '.join('?' * len(_COLUMNS.split(', ')))})"
_UPDATE = (
    "UPDATE items SET parent_id=?, item_type=?, position=?, preorder=?, subtree_end=?, depth=?, title=?, url=?, "
    "url_hash=?, note=?, note_color=?, tags_json=?, tag_text=?, path_json=?, folder_path=?, extra_json=?, "
    "metadata_json=?, synthetic=?, content_hash=?, revision=revision+1 WHERE pk=?"
)
_REORDER = "UPDATE items SET position=?, preorder=?, subtree_end=?, depth=? WHERE pk=?"


@dataclass
class ItemCounts:
    inserted: int = 0
    updated: int = 0
    deleted: int = 0


class _PathCache:
    """Siblings share their path list: serialise it (JSON and ``a / b`` text) once."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[list[str], str, str]] = {}

    def __call__(self, value: list[str]) -> tuple[str, str]:
        hit = self._cache.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1], hit[2]
        json_text, folder_path = dumps(value), " / ".join(value)
        self._cache[id(value)] = (value, json_text, folder_path)
        return json_text, folder_path


def _values(row: ItemRow, paths: _PathCache) -> tuple:
    tags_json = dumps(row.tags) if row.tags else "[]"
    tag_text = "\n".join(str(t.get("text", "")) for t in row.tags) if row.tags else ""
    extra_json = dumps(row.extra) if row.extra else None
    metadata_json = dumps(row.metadata) if row.metadata else "{}"
    p_json, folder_path = paths(row.path)
    content = "\x1f".join((
        row.parent_id if row.parent_id is not None else "\x1e", row.item_type, row.title, row.url, row.note,
        row.note_color or "\x1e", tags_json, p_json, extra_json or "\x1e", metadata_json, "1" if row.synthetic else "0",
    ))
    digest = int.from_bytes(hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                            "big", signed=True)
    return (row.parent_id, row.item_type, row.position, row.preorder, row.subtree_end, row.depth, row.title, row.url,
            url_hash(row.url), row.note, row.note_color, tags_json, tag_text, p_json, folder_path, extra_json, metadata_json,
            1 if row.synthetic else 0, digest)


class FtsWorker:
    """Indexes inserted rows on a helper thread while the caller prepares the next chunk.

    Full-text indexing runs inside SQLite without the GIL, so it overlaps with the Python work of
    building the next rows. The connection is used by one thread at a time: every statement the
    caller runs is preceded by :meth:`wait`.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bookmark-research-fts")
        self.pending: Future[None] | None = None

    def wait(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            pending.result()

    def submit(self, first_pk: int, last_pk: int, chars: list[tuple[int, str]],
               folder_chars: list[tuple[int, str]]) -> None:
        self.wait()
        self.pending = self.pool.submit(index_new_items, self.conn, first_pk, last_pk, chars, folder_chars)

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self.pool.shutdown()


CHUNK = 4096


def write_items(conn: sqlite3.Connection, source_id: str, section: ParsedSection, fts: FtsWorker) -> ItemCounts:
    """Diff a parsed section against its stored items and apply the difference."""
    counts = ItemCounts()
    fts.wait()
    existing = {
        item_id: (pk, digest, pos, pre, end, depth)
        for item_id, pk, digest, pos, pre, end, depth in conn.execute(
            "SELECT item_id, pk, content_hash, position, preorder, subtree_end, depth FROM items "
            "WHERE source_id=? AND section_id=?",
            (source_id, section.section_id),
        )
    }
    next_pk = conn.execute("SELECT COALESCE(MAX(pk), 0) FROM items").fetchone()[0] + 1
    gone = [(existing[item_id][0],) for item_id in existing.keys() - {row.item_id for row in section.items}]
    if gone:
        conn.executemany("DELETE FROM items WHERE pk=?", gone)
    paths = _PathCache()
    sid = section.section_id
    for start in range(0, len(section.items), CHUNK):
        inserts, updates, reorders, tag_rows, retag, chars, folder_chars = [], [], [], [], [], [], []
        for row in section.items[start:start + CHUNK]:
            values = _values(row, paths)
            old = existing.get(row.item_id)
            if old is None:
                pk = next_pk
                next_pk += 1
                inserts.append((pk, source_id, sid, row.item_id, *values, 1))
                text = char_text(row.title, row.url, row.note, values[12])  # 12: tag_text
                if text:
                    chars.append((pk, text))
                if row.item_type == "folder" and (text := char_text(row.title)):
                    folder_chars.append((pk, text))
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
        fts.wait()
        if retag:
            conn.executemany("DELETE FROM item_tags WHERE item_pk=?", retag)
        if updates:
            conn.executemany(_UPDATE, updates)
        if reorders:
            conn.executemany(_REORDER, reorders)
        if inserts:
            conn.executemany(_INSERT, inserts)
        if tag_rows:
            conn.executemany("INSERT OR IGNORE INTO item_tags (item_pk, position, color, text) VALUES (?, ?, ?, ?)",
                             tag_rows)
        if inserts:
            fts.submit(inserts[0][0], inserts[-1][0], chars, folder_chars)
        counts.inserted += len(inserts)
        counts.updated += len(updates)
    counts.deleted = len(gone)
    return counts
