"""Resolve section / group / folder selectors into SQL conditions over ``items``."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from bookmark_research.errors import ConflictError, NotFoundError


@dataclass
class Scope:
    source_id: str
    where: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)
    anchor_of: dict[str, str | None] = field(default_factory=dict)
    selected_sections: list[str] | None = None  # section ids picked by --section / --group (before canonicalising)

    def sql(self, preorder_index: bool = True) -> tuple[str, list[Any]]:
        """WHERE clause over ``items i`` and its parameters.

        ``preorder_index=False`` keeps SQLite from using a folder's preorder bounds to search the tree
        index (``+i.preorder``), for queries that search it by other bounds (folder-path subtrees).
        """
        where = self.where if preorder_index else [w.replace("i.preorder BETWEEN", "+i.preorder BETWEEN")
                                                     for w in self.where]
        return " AND ".join(["i.source_id = ?", *where]), [self.source_id, *self.params]


def find_sections(conn: sqlite3.Connection, source_id: str, selector: str) -> list[tuple[str, str | None, int]]:
    """Sections whose id, label, slot or file path equals ``selector``: (section_id, canonical_id, is_anchor)."""
    rows = conn.execute(
        "SELECT section_id, canonical_id, is_anchor FROM sections WHERE source_id=? AND "
        "(section_id=? OR label=? OR slot=? OR file_path=?) ORDER BY section_id",
        (source_id, selector, selector, selector, selector)).fetchall()
    if not rows:
        known = [f"{sid} ({label})" for sid, label in conn.execute(
            "SELECT section_id, label FROM sections WHERE source_id=? ORDER BY section_id LIMIT 12", (source_id,))]
        raise NotFoundError(f"unknown section {selector!r} in {source_id}; sections: {', '.join(known) or 'none'}")
    return rows


def find_group(conn: sqlite3.Connection, source_id: str, selector: str) -> str:
    """A group node by id, else by unique label."""
    row = conn.execute("SELECT node_id FROM nodes WHERE source_id=? AND node_type='group' AND node_id=?",
                       (source_id, selector)).fetchone()
    if row:
        return row[0]
    rows = conn.execute("SELECT node_id FROM nodes WHERE source_id=? AND node_type='group' AND label=?",
                        (source_id, selector)).fetchall()
    if len(rows) == 1:
        return rows[0][0]
    if len(rows) > 1:
        raise ConflictError(f"group label {selector!r} is ambiguous ({', '.join(r[0] for r in rows)}); use the group id")
    raise NotFoundError(f"unknown group {selector!r} in {source_id}")


def group_sections(conn: sqlite3.Connection, source_id: str, group_id: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT n.section_id FROM memberships m JOIN nodes n ON n.source_id=m.source_id AND n.node_id=m.node_id "
        "WHERE m.source_id=? AND m.group_id=? AND n.section_id IS NOT NULL ORDER BY n.section_id",
        (source_id, group_id))]


def build_scope(
    conn: sqlite3.Connection,
    source_id: str,
    *,
    section: str | None = None,
    group_id: str | None = None,
    folder_id: str | None = None,
    tags: list[str] | None = None,
    tag_colors: list[str] | None = None,
    item_types: list[str] | None = None,
) -> Scope:
    scope = Scope(source_id)
    selected: list[str] | None = None
    canonical_of: dict[str, str | None] = {}
    if section is not None:
        rows = find_sections(conn, source_id, section)
        selected = [r[0] for r in rows]
        canonical_of.update({r[0]: r[1] for r in rows})
        scope.anchor_of = {r[0]: r[1] for r in rows if r[2]}
    if group_id is not None:
        gid = find_group(conn, source_id, group_id)
        members = group_sections(conn, source_id, gid)
        selected = members if selected is None else [s for s in selected if s in members]
        for sid, canonical, is_anchor in conn.execute(
                "SELECT section_id, canonical_id, is_anchor FROM sections WHERE source_id=?", (source_id,)):
            canonical_of.setdefault(sid, canonical)
            if sid in selected and is_anchor:
                scope.anchor_of[sid] = canonical
    if selected is not None:
        scope.selected_sections = selected
        trees = sorted({c for s in selected if (c := canonical_of.get(s))})
        scope.where.append(f"i.section_id IN ({','.join('?' * len(trees))})" if trees else "0")
        scope.params.extend(trees)
    if folder_id is not None:
        # Through the (source, section, item) index, one section at a time: item ids alone are not indexed.
        folder_sql = ("SELECT section_id, preorder, subtree_end FROM items WHERE source_id=? AND section_id IN "
                      "(SELECT section_id FROM sections WHERE source_id=?) AND item_id=? AND item_type='folder'")
        folders = conn.execute(folder_sql, (source_id, source_id, folder_id)).fetchall()
        if not folders:
            raise NotFoundError(f"unknown folder id {folder_id!r} in {source_id}")
        scope.where.append("(" + " OR ".join("(i.section_id=? AND i.preorder BETWEEN ? AND ?)" for _ in folders) + ")")
        for f in folders:
            scope.params.extend(f)
    for tag in tags or []:
        scope.where.append("EXISTS (SELECT 1 FROM item_tags t WHERE t.item_pk=i.pk AND t.text=?)")
        scope.params.append(tag)
    for color in tag_colors or []:
        scope.where.append("EXISTS (SELECT 1 FROM item_tags t WHERE t.item_pk=i.pk AND t.color=?)")
        scope.params.append(color)
    types = item_types or ["bookmark"]
    scope.where.append(f"i.item_type IN ({','.join('?' * len(types))})")
    scope.params.extend(types)
    return scope
