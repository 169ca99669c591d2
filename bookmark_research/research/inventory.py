"""The frozen input inventory of a session: every original URL in scope, one instance per bookmark.

An inventory is built once at ``research_start`` (from a plain URL list, or from indexed sources read in
one SQLite snapshot), written to ``inventory.json`` and hashed; every later load re-hashes the file, so a
re-sync of the package, an edit or a truncation can never silently change a running session's scope.

Entries are keyed by the exact original URL (no normalisation). Copy anchors add *appearances* of a
bookmark (every card that shows its tree), never extra instances. Private fields (notes, tags, raw JSON,
text cards) are not copied: the inventory describes where bookmarks sit, not what the user wrote about them.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from typing import Any

from bookmark_research.canvas.canvasfile import edge_direction
from bookmark_research.errors import InvalidInputError, NotFoundError
from bookmark_research.providers.urls import canonical_url
from bookmark_research.research.ids import bookmark_instance_id, inventory_id, sha256_text, url_instance_id

PREVIEW_ITEMS = 20
EMPTY_COLLECTIONS = ("sources", "files", "sections", "folders", "nodes", "edges", "memberships")


def url_kind(url: str) -> tuple[str | None, str]:
    """(retrieval_url, url_kind): the canonical http(s) key and ``web``, or ``None`` and ``local``/``unsupported``."""
    key = canonical_url(url)
    if key is not None:
        return key, "web"
    return None, "local" if url[:5].lower() == "file:" else "unsupported"


def _entry(url: str) -> dict[str, Any]:
    retrieval, kind = url_kind(url)
    return {"id": inventory_id(url), "original_url": url, "retrieval_url": retrieval, "url_kind": kind,
            "instances": []}


def _finish(manifest: dict[str, Any], entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    manifest["entries"] = [entries[k] for k in sorted(entries)]
    manifest["counts"] = {"unique_urls": len(entries),
                          "bookmark_instances": sum(len(e["instances"]) for e in entries.values()),
                          **{name: len(manifest.get(name) or []) for name in EMPTY_COLLECTIONS}}
    return manifest


def from_urls(urls: list[str]) -> dict[str, Any]:
    """An inventory of a plain bookmark list: one entry per distinct string, one instance per occurrence."""
    entries: dict[str, dict[str, Any]] = {}
    for position, url in enumerate(urls):
        entry = entries.get(inventory_id(url))
        if entry is None:
            entry = entries[inventory_id(url)] = _entry(url)
        entry["instances"].append({"instance_id": url_instance_id(position, url), "input_index": position,
                                   "url": url})
    manifest = {"schema_version": 1, "index_state": "provided", "input_kind": "urls", "source_ids": [],
                "input_version": sha256_text(json.dumps(urls, ensure_ascii=False)),
                **{name: [] for name in EMPTY_COLLECTIONS}}
    return _finish(manifest, entries)


def empty() -> dict[str, Any]:
    manifest = {"schema_version": 1, "index_state": "none", "input_kind": "none", "source_ids": [],
                "input_version": sha256_text("[]"), **{name: [] for name in EMPTY_COLLECTIONS}}
    return _finish(manifest, {})


# --- indexed sources -----------------------------------------------------------------------------------


def source_input_version(conn: sqlite3.Connection, source_id: str) -> tuple[str, list[dict[str, Any]]]:
    """SHA-256 of a source's file list ``{file_path, kind, sha256}`` (sorted), and the list."""
    files = [{"file_path": f, "kind": k, "sha256": h} for f, k, h in conn.execute(
        "SELECT file_path, kind, sha256 FROM files WHERE source_id=? ORDER BY file_path", (source_id,))]
    return sha256_text(json.dumps(files, ensure_ascii=False)), files


def overall_input_version(files: list[dict[str, Any]]) -> str:
    rows = sorted([f["source_id"], f["file_path"], f["kind"], f["sha256"]] for f in files)
    return sha256_text(json.dumps(rows, ensure_ascii=False))


def resolve_bookmark_ref(conn: sqlite3.Connection, ref: dict[str, str]) -> tuple[str, str, str]:
    """The (source_id, tree section_id, item_id) a ``{source_id, section_id, item_id}`` ref names.

    The section may be given by id, label or file path, of the tree itself or of a card showing it.
    """
    error = "bookmark_ref must identify one bookmark in its source and section"
    trees = {c or s for s, c in conn.execute(
        "SELECT section_id, canonical_id FROM sections WHERE source_id=? AND (section_id=? OR label=? OR file_path=?)",
        (ref["source_id"], ref["section_id"], ref["section_id"], ref["section_id"]))}
    rows = [] if not trees else conn.execute(
        f"SELECT section_id FROM items WHERE source_id=? AND item_id=? AND item_type='bookmark' AND url<>'' "
        f"AND section_id IN ({','.join('?' * len(trees))})", (ref["source_id"], ref["item_id"], *sorted(trees))).fetchall()
    if len(rows) != 1:
        raise InvalidInputError(f"{error}: {ref['source_id']}/{ref['section_id']}/{ref['item_id']}")
    return ref["source_id"], rows[0][0], ref["item_id"]


def from_index(conn: sqlite3.Connection, source_ids: list[str]) -> dict[str, Any]:
    """An inventory of indexed sources (the caller holds one read snapshot over all queries)."""
    manifest: dict[str, Any] = {"schema_version": 1, "index_state": "last_synchronized", "input_kind": "indexed_sources",
                                "source_ids": sorted(source_ids), **{name: [] for name in EMPTY_COLLECTIONS}}
    entries: dict[str, dict[str, Any]] = {}
    without_url = 0
    for sid in manifest["source_ids"]:
        if conn.execute("SELECT 1 FROM sources WHERE source_id=?", (sid,)).fetchone() is None:
            raise NotFoundError(f"Unknown source: {sid}")
        version, files = source_input_version(conn, sid)
        state, version_id = conn.execute("SELECT state, version_id FROM sources WHERE source_id=?", (sid,)).fetchone()
        manifest["sources"].append({"source_id": sid, "input_version": version, "version_id": version_id,
                                    "state": state, "file_count": len(files)})
        manifest["files"] += [{"source_id": sid, **f} for f in files]
        sections = [dict(zip(("section_id", "file_path", "section_type", "kind", "slot", "label", "title",
                              "description_md", "is_anchor", "canonical_id", "revision"), r)) for r in conn.execute(
            "SELECT section_id, file_path, section_type, kind, slot, label, title, description_md, is_anchor, "
            "canonical_id, revision FROM sections WHERE source_id=? ORDER BY section_id", (sid,))]
        for s in sections:
            s["is_anchor"] = bool(s["is_anchor"])
        nodes = [dict(zip(("node_id", "canvas_path", "node_type", "file_path", "section_id", "label", "color"), r))
                 for r in conn.execute("SELECT node_id, canvas_path, node_type, file_path, section_id, label, color "
                                       "FROM nodes WHERE source_id=? ORDER BY position", (sid,))]
        manifest["nodes"] += [{"source_id": sid, **n} for n in nodes]
        edges = [{"edge_id": e, "canvas_path": c, "from_node": f, "to_node": t, "from_end": fe, "to_end": te,
                  "direction": edge_direction(fe, te), "label": lab} for e, c, f, t, fe, te, lab in conn.execute(
            "SELECT edge_id, canvas_path, from_node, to_node, from_end, to_end, label FROM edges WHERE source_id=? "
            "ORDER BY position", (sid,))]
        manifest["edges"] += [{"source_id": sid, **e} for e in edges]
        members = conn.execute("SELECT group_id, node_id FROM memberships WHERE source_id=? ORDER BY group_id, node_id",
                               (sid,)).fetchall()
        manifest["memberships"] += [{"source_id": sid, "group_id": g, "node_id": n} for g, n in members]

        # Each card (section) with the canvas nodes showing it and their groups and edges; the appearances of a
        # tree are the cards whose canonical tree it is (the tree's own card and its copy anchors).
        groups_of: dict[str, list[str]] = defaultdict(list)
        for g, n in members:
            groups_of[n].append(g)
        edges_of: dict[str, list[str]] = defaultdict(list)
        for e in edges:
            edges_of[e["from_node"]].append(e["edge_id"])
            if e["to_node"] != e["from_node"]:
                edges_of[e["to_node"]].append(e["edge_id"])
        nodes_of: dict[str, list[str]] = defaultdict(list)
        for n in nodes:
            if n["section_id"]:
                nodes_of[n["section_id"]].append(n["node_id"])
        appearances: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for s in sections:
            node_ids = nodes_of.get(s["section_id"], [])
            s.update(node_ids=node_ids, group_ids=sorted({g for n in node_ids for g in groups_of.get(n, [])}),
                     edge_ids=sorted({e for n in node_ids for e in edges_of.get(n, [])}))
            appearances[s["canonical_id"] or s["section_id"]].append(
                {"section_id": s["section_id"], "label": s["label"], "is_anchor": s["is_anchor"]})
        manifest["sections"] += [{"source_id": sid, **s} for s in sections]

        folders: dict[tuple[str, str], str | None] = {}
        for sec, item, parent, title, path, preorder, end, depth, rev in conn.execute(
                "SELECT section_id, item_id, parent_id, title, path_json, preorder, subtree_end, depth, revision "
                "FROM items WHERE source_id=? AND item_type='folder' ORDER BY section_id, preorder", (sid,)):
            folders[(sec, item)] = parent
            manifest["folders"].append({"source_id": sid, "section_id": sec, "item_id": item, "parent_id": parent,
                                        "title": title, "path": json.loads(path), "preorder": preorder,
                                        "subtree_end": end, "depth": depth, "revision": rev})
        for sec, item, parent, title, url, path, preorder, rev in conn.execute(
                "SELECT section_id, item_id, parent_id, title, url, path_json, preorder, revision FROM items "
                "WHERE source_id=? AND item_type='bookmark' ORDER BY section_id, preorder", (sid,)):
            if not url:
                without_url += 1
                continue
            ancestors: list[str] = []
            current = parent
            while current is not None and len(ancestors) < 1000:
                ancestors.append(current)
                current = folders.get((sec, current))
            key = inventory_id(url)
            entry = entries.get(key)
            if entry is None:
                entry = entries[key] = _entry(url)
            entry["instances"].append({
                "instance_id": bookmark_instance_id(sid, sec, item), "source_id": sid, "section_id": sec,
                "item_id": item, "title": title, "url": url, "path": json.loads(path),
                "canonical_section_id": sec, "ancestor_ids": ancestors[::-1], "revision": rev, "preorder": preorder,
                "appearances": appearances.get(sec, [])})
    manifest["input_version"] = overall_input_version(manifest["files"])
    _finish(manifest, entries)
    manifest["counts"]["bookmarks_without_url"] = without_url
    return manifest


# --- scope -----------------------------------------------------------------------------------------------


def select(manifest: dict[str, Any], mode: str, inventory_ids: list[str] | None,
           refs: list[tuple[str, str, str]], ref_objects: list[dict[str, str]]) -> dict[str, Any]:
    """The ``source_scope`` of a session over ``manifest`` (``refs``: resolved bookmark refs)."""
    entries = manifest["entries"]
    all_ids = [e["id"] for e in entries]
    if mode == "questions":
        selected: list[str] = []
    elif mode == "whole":
        selected = all_ids
    elif inventory_ids:
        known = set(all_ids)
        if any(i not in known for i in inventory_ids):
            raise InvalidInputError("An explicit subset needs existing inventory_ids or bookmark_refs")
        wanted = set(inventory_ids)
        selected = [i for i in all_ids if i in wanted]
    else:
        wanted_instances = {bookmark_instance_id(*r) for r in refs}
        selected = [e["id"] for e in entries if any(i["instance_id"] in wanted_instances for i in e["instances"])]
        if not selected:
            raise InvalidInputError("An explicit subset needs existing inventory_ids or bookmark_refs")
    chosen = set(selected)
    instance_total = sum(len(e["instances"]) for e in entries)
    instance_selected = sum(len(e["instances"]) for e in entries if e["id"] in chosen)
    return {"mode": mode, "input_version": manifest["input_version"], "input_url_count": len(entries),
            "selected_url_count": len(selected), "input_instance_count": instance_total,
            "selected_instance_count": instance_selected, "selected_inventory_ids": selected,
            "omitted_inventory_ids": sorted(i for i in all_ids if i not in chosen),
            "focus_bookmark_refs": ref_objects if mode == "whole" else []}


def context_bookmarks(manifest: dict[str, Any], selected: list[str]) -> list[dict[str, Any]]:
    """One record per selected bookmark instance, with its groups and edges; no notes or tags."""
    chosen = set(selected)
    labels = {(n["source_id"], n["node_id"]): n.get("label") for n in manifest.get("nodes", [])}
    edges = {(e["source_id"], e["edge_id"]): e for e in manifest.get("edges", [])}
    cards = {(c["source_id"], c["section_id"]): c for c in manifest.get("sections", [])}
    out: list[dict[str, Any]] = []
    for entry in manifest["entries"]:
        if entry["id"] not in chosen:
            continue
        for inst in entry["instances"]:
            if "source_id" not in inst:  # URL-list input
                out.append({**inst, "inventory_id": entry["id"], "index_state": "provided"})
                continue
            sid = inst["source_id"]
            shown = [cards.get((sid, a["section_id"]), {}) for a in inst["appearances"]]
            group_ids = sorted({g for c in shown for g in c.get("group_ids", [])})
            edge_ids = sorted({e for c in shown for e in c.get("edge_ids", [])})
            first = next((a for a in inst["appearances"] if a["section_id"] == inst["section_id"]),
                         inst["appearances"][0] if inst["appearances"] else {})
            out.append({
                "source_id": sid, "section_id": inst["section_id"], "item_id": inst["item_id"],
                "instance_id": inst["instance_id"], "title": inst["title"], "url": inst["url"], "path": inst["path"],
                "section_label": first.get("label"), "canonical_section_id": inst["canonical_section_id"],
                "shown_in_sections": [a["section_id"] for a in inst["appearances"]],
                "inventory_id": entry["id"], "index_state": "last_synchronized",
                "memberships": [{"group_id": g, "label": labels.get((sid, g))} for g in group_ids],
                "edges": [{k: edges[(sid, e)][k] for k in ("edge_id", "from_node", "to_node", "direction", "label")}
                          for e in edge_ids if (sid, e) in edges]})
    return out


def preview(scope: dict[str, Any], context_path: str) -> dict[str, Any]:
    """``source_scope`` cut for responses: lists to their first 20 items with ``_total``/``_truncated``."""
    out: dict[str, Any] = {}
    for key, value in scope.items():
        if isinstance(value, list):
            out[key] = value[:PREVIEW_ITEMS]
            out[f"{key}_total"] = len(value)
            out[f"{key}_truncated"] = len(value) > PREVIEW_ITEMS
        else:
            out[key] = value
    out["artifact_path"] = context_path
    out["artifact_json_pointer"] = "/source_scope"
    out["detail_note"] = ("Lists are cut to their first 20 items; context.json holds the complete scope and "
                          "research_inventory pages through every entry.")
    if scope.get("mode") == "whole" and scope.get("focus_bookmark_refs"):
        out["focus_note"] = FOCUS_NOTE
    return out


FOCUS_NOTE = ("Whole mode: every bookmark of the sources is in scope and the bookmark_refs only mark focus; "
              "start with scope_mode subset (--scope-mode subset) to narrow the scope to them.")


class Links:
    """Which inventory entries (and bookmark refs) a fetched URL answers: exact original URL or canonical key."""

    def __init__(self, manifest: dict[str, Any], selected: list[str]) -> None:
        chosen = set(selected)
        self.by_url: dict[str, list[str]] = defaultdict(list)
        self.refs: dict[str, list[dict[str, str]]] = {}
        self.instances: dict[str, list[str]] = {}
        for entry in manifest["entries"]:
            if entry["id"] not in chosen:
                continue
            self.by_url[entry["original_url"]].append(entry["id"])
            if entry["retrieval_url"] and entry["retrieval_url"] != entry["original_url"]:
                self.by_url[entry["retrieval_url"]].append(entry["id"])
            self.refs[entry["id"]] = [{"source_id": i["source_id"], "section_id": i["section_id"],
                                       "item_id": i["item_id"]} for i in entry["instances"] if "source_id" in i]
            self.instances[entry["id"]] = [i["instance_id"] for i in entry["instances"]]

    def for_url(self, url: str) -> list[str]:
        ids = list(self.by_url.get(url, []))
        key = canonical_url(url)
        if key is not None:
            ids += self.by_url.get(key, [])
        return sorted(set(ids))

    def bookmark_refs(self, ids: list[str]) -> list[dict[str, str]]:
        return [r for i in ids for r in self.refs.get(i, [])]

    def instance_ids(self, ids: list[str]) -> list[str]:
        return [b for i in ids for b in self.instances.get(i, [])]
