"""Canvas context: section headers, copies, item ancestors, nodes, groups, edges and related nodes."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from bookmark_research.canvas.canvasfile import edge_direction
from bookmark_research.errors import InvalidInputError, NotFoundError
from bookmark_research.index.scope import find_group, find_sections, group_sections
from bookmark_research.index.search import item_rows
from bookmark_research.index.status import COUNT_NOTE

_SECTION_COLUMNS = ("section_id", "file_path", "section_type", "kind", "slot", "label", "title", "description_md",
                    "is_anchor", "inherit_ref", "inherit_path", "canonical_id", "raw_json", "revision")


def _sections(conn: sqlite3.Connection, source_id: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in conn.execute(f"SELECT {', '.join(_SECTION_COLUMNS)} FROM sections WHERE source_id=? ORDER BY section_id",
                          (source_id,)):
        row = dict(zip(_SECTION_COLUMNS, r))
        row["is_anchor"] = bool(row["is_anchor"])
        row["raw_json"] = json.loads(row["raw_json"])
        row["descriptionMd"] = row["description_md"]
        out[row["section_id"]] = row
    counts = {sid: (n, u) for sid, n, u in conn.execute(
        "SELECT section_id, COUNT(*), COUNT(DISTINCT CASE WHEN url<>'' THEN url END) FROM items "
        "WHERE source_id=? AND item_type='bookmark' GROUP BY section_id", (source_id,))}
    for row in out.values():
        tree = row["canonical_id"]
        row["bookmark_count"] = counts.get(tree, (0, 0))[0] if tree else 0
        row["anchor_of"] = tree if row["is_anchor"] else None
        row["counted_in_totals"] = not row["is_anchor"]
    return out


def _node_rows(conn: sqlite3.Connection, source_id: str) -> dict[str, dict[str, Any]]:
    cols = ("node_id", "canvas_path", "node_type", "position", "file_ref", "file_path", "section_id", "label", "text",
            "color", "x", "y", "width", "height", "raw_json", "revision")
    out = {}
    for r in conn.execute(f"SELECT {', '.join(cols)} FROM nodes WHERE source_id=? ORDER BY position", (source_id,)):
        row = dict(zip(cols, r))
        row["raw_json"] = json.loads(row["raw_json"])
        out[row["node_id"]] = row
    return out


def get_context(
    conn: sqlite3.Connection,
    source_id: str,
    *,
    section: str | None = None,
    group_id: str | None = None,
    item_id: str | None = None,
) -> dict[str, Any]:
    sections = _sections(conn, source_id)
    nodes = _node_rows(conn, source_id)
    member_pairs = conn.execute("SELECT group_id, node_id FROM memberships WHERE source_id=? ORDER BY group_id, node_id",
                                (source_id,)).fetchall()
    members: dict[str, list[str]] = {}
    parents: dict[str, list[str]] = {}
    for g, n in member_pairs:
        members.setdefault(g, []).append(n)
        parents.setdefault(n, []).append(g)

    cards: list[str] | None = None
    if section is not None:
        cards = [r[0] for r in find_sections(conn, source_id, section)]
    gid = find_group(conn, source_id, group_id) if group_id is not None else None
    items: list[dict[str, Any]] = []
    if item_id is not None:
        trees = {sections[c]["canonical_id"] for c in cards} if cards is not None else None
        rows = conn.execute("SELECT pk, section_id FROM items WHERE source_id=? AND item_id=?",
                            (source_id, item_id)).fetchall()
        rows = [(pk, sid) for pk, sid in rows if trees is None or sid in trees]
        if not rows:
            raise NotFoundError(f"unknown item {item_id!r} in the requested scope of {source_id}")
        item_trees = {sid for _, sid in rows}
        item_cards = [sid for sid, s in sections.items() if s["canonical_id"] in item_trees]
        cards = item_cards if cards is None else [c for c in cards if c in item_cards]
        full = item_rows(conn, [pk for pk, _ in rows])
        for pk, sid in rows:
            row = full[pk]
            chain: list[int] = []
            parent = row["parent_id"]
            while parent is not None and len(chain) < 1000:
                found = conn.execute("SELECT pk, parent_id FROM items WHERE source_id=? AND section_id=? AND item_id=?",
                                     (source_id, sid, parent)).fetchone()
                if found is None:
                    break
                chain.append(found[0])
                parent = found[1]
            anc_rows = item_rows(conn, chain)
            # Ancestors are full records except their own paths: each one's path is the titles of the
            # ancestors above it (the item's ``path`` holds the whole chain once), so the output grows
            # linearly with depth instead of repeating every path.
            row["ancestors"] = []
            for depth, pk in enumerate(reversed(chain)):
                ancestor = anc_rows[pk]
                ancestor.pop("path", None)
                ancestor.pop("folder_path", None)
                ancestor["depth"] = depth
                row["ancestors"].append(ancestor)
            items.append(row)

    if gid is not None:
        group_members = set(members.get(gid, []))
        member_cards = set(group_sections(conn, source_id, gid))
        if cards is not None:
            inside = [c for c in cards if c in member_cards]
            if item_id is not None and not inside:
                raise InvalidInputError(f"item {item_id!r} is outside the requested group {gid!r}")
            cards = inside
            selected = {gid} | {n for n in group_members if nodes[n]["section_id"] in cards}
        else:
            cards = sorted(member_cards)
            selected = {gid} | group_members
    elif cards is not None:
        card_nodes = {nid for nid, n in nodes.items() if n["section_id"] in cards}
        selected = card_nodes | {g for n in card_nodes for g in parents.get(n, [])}
    else:
        selected = set(nodes)

    listed = cards if cards is not None else list(sections)
    listed_sections = [sections[c] for c in listed]
    counted_trees = sorted({s["canonical_id"] for s in listed_sections if s["counted_in_totals"] and s["canonical_id"]})
    instances, unique_urls = 0, 0
    if counted_trees:
        instances, unique_urls = conn.execute(
            f"SELECT COUNT(*), COUNT(DISTINCT CASE WHEN url<>'' THEN url END) FROM items WHERE source_id=? AND "
            f"item_type='bookmark' AND section_id IN ({','.join('?' * len(counted_trees))})",
            (source_id, *counted_trees)).fetchone()

    edges = []
    for eid, cpath, frm, to, fe, te, label, raw, rev in conn.execute(
            "SELECT edge_id, canvas_path, from_node, to_node, from_end, to_end, label, raw_json, revision FROM edges "
            "WHERE source_id=? ORDER BY position", (source_id,)):
        if frm in selected or to in selected:
            edges.append({"edge_id": eid, "canvas_path": cpath, "from_node": frm, "to_node": to, "from_end": fe,
                          "to_end": te, "direction": edge_direction(fe, te), "label": label,
                          "raw_json": json.loads(raw), "revision": rev})
    memberships = [{"group_id": g, "node_id": n} for g, n in member_pairs if g in selected or n in selected]
    related_ids = ({e["from_node"] for e in edges} | {e["to_node"] for e in edges}
                   | {m["group_id"] for m in memberships} | {m["node_id"] for m in memberships}) - selected
    node_list = [n for nid, n in nodes.items() if nid in selected]
    groups = [{**n, "members": members.get(n["node_id"], []), "parent_groups": parents.get(n["node_id"], [])}
              for n in node_list if n["node_type"] == "group"]
    return {
        "source_id": source_id,
        "scope": {"section": section, "group_id": group_id, "item_id": item_id},
        "sections": listed_sections,
        "counts": {"sections": len(listed_sections),
                   "counted_sections": sum(1 for s in listed_sections if s["counted_in_totals"]),
                   "instances": instances, "unique_urls": unique_urls, "note": COUNT_NOTE},
        "items": items,
        "nodes": node_list,
        "groups": groups,
        "edges": edges,
        "related_nodes": [n for nid, n in nodes.items() if nid in related_ids],
        "memberships": memberships,
    }
