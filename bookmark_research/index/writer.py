"""Incremental index sync of one source: hash-skip, section/item upserts, anchors, canvas layout.

Callers run :func:`sync_index` inside one write transaction; any exception leaves the index as it was.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bookmark_research.canvas.canvasfile import ParsedCanvas, memberships, parse_canvas
from bookmark_research.canvas.layout import resolve_reference
from bookmark_research.canvas.sections import ParsedSection, open_section
from bookmark_research.canvas.strictjson import dumps
from bookmark_research.errors import ConflictError, InvalidInputError
from bookmark_research.index.items import FtsWorker, identity_changes, write_identity, write_items

Progress = Callable[[int, int, str], None]


@dataclass
class IndexReport:
    changed_files: list[str] = field(default_factory=list)
    skipped_files: list[str] = field(default_factory=list)
    items_inserted: int = 0
    items_updated: int = 0
    items_deleted: int = 0
    retained_missing_files: list[str] = field(default_factory=list)
    removed_files: list[str] = field(default_factory=list)
    replaced_canvas_files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    changed: bool = False  # anything written: sections, items, files or canvas rows


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sync_index(
    conn: sqlite3.Connection,
    source_id: str,
    files: dict[str, bytes],
    *,
    completeness: str,
    progress: Progress | None = None,
) -> IndexReport:
    """Bring the index of ``source_id`` in line with ``files`` (package path → bytes)."""
    report = IndexReport()
    complete = completeness == "complete"
    existing = {p: (k, h) for p, k, h in conn.execute(
        "SELECT file_path, kind, sha256 FROM files WHERE source_id=?", (source_id,))}
    section_rows: dict[str, tuple[str, str]] = {}
    tree_digests: dict[str, str | None] = {}
    for sid, path, kind, tree_digest in conn.execute(
            "SELECT section_id, file_path, kind, tree_digest FROM sections WHERE source_id=?", (source_id,)):
        section_rows[sid], tree_digests[sid] = (path, kind), tree_digest
    path_to_section = {path: sid for sid, (path, _) in section_rows.items()}
    hashes = {p: sha256_hex(b) for p, b in files.items()}

    # 1. Which section files changed (by hash); the rest is skipped without parsing.
    json_paths = sorted(p for p in files if not p.endswith(".canvas"))
    total = len(json_paths)
    for path in json_paths:
        unchanged = existing.get(path) == ("section", hashes[path]) and path in path_to_section
        (report.skipped_files if unchanged else report.changed_files).append(path)
        if unchanged and progress:
            progress(len(report.skipped_files), total, path)
    changed = set(report.changed_files)

    # 2. Each changed file in turn: parse, check its identity, write its section and stream its items
    #    (one section's JSON in memory at a time). A later failure rolls everything back.
    by_id: dict[str, str] = {}  # section id -> file path, of the files parsed so far
    renamed_from: set[str] = set()
    fts = FtsWorker(conn)
    try:
        done = len(report.skipped_files)
        for path in report.changed_files:
            section = open_section(files[path], path)
            sid = section.section_id
            if sid in by_id:
                raise ConflictError(f"{path}: section id {sid!r} is also used by {by_id[sid]}")
            by_id[sid] = path
            old = section_rows.get(sid)
            if old is not None and old[0] != path:
                if old[0] in files and old[0] not in changed:
                    raise ConflictError(f"{path}: section id {sid!r} is also used by {old[0]}")
                renamed_from.add(old[0])
            fts.wait()
            # A browser tree whose text is exactly as indexed (other notes or tags in its identity map):
            # only the annotated items change, and the tree is not walked.
            same_tree = (old is not None and old == (path, "permanent") and section.identity is not None
                         and section.tree_digest is not None and section.tree_digest == tree_digests.get(sid))
            _upsert_section(conn, source_id, section)
            conn.execute("UPDATE sections SET tree_digest=? WHERE source_id=? AND section_id=? AND tree_digest IS NOT ?",
                         (section.tree_digest, source_id, sid, section.tree_digest))
            if same_tree:
                counts = write_identity(conn, source_id, section, identity_changes(conn, source_id, section))
            else:  # the helper thread may still be storing this section's last rows when this returns
                counts = write_items(conn, source_id, section, fts)
            report.items_inserted += counts.inserted
            report.items_updated += counts.updated
            report.items_deleted += counts.deleted
            report.warnings.extend(section.warnings)
            done += 1
            if progress:
                progress(done, total, path)
        fts.finish()
    finally:
        fts.close()

    # 3. Renames, replacements and deletions, now that every changed file's section is known.
    delete_sections: set[str] = set()
    for path in report.changed_files:
        old_sid = path_to_section.get(path)
        if old_sid is not None and old_sid not in by_id:
            delete_sections.add(old_sid)
    missing = sorted(p for p in existing if p not in files and p not in renamed_from)
    canvas_in = next((p for p in files if p.endswith(".canvas")), None)
    canvas_old = next((p for p, (k, _) in existing.items() if k == "canvas"), None)
    if canvas_in and canvas_old and canvas_old != canvas_in:
        report.replaced_canvas_files.append(canvas_old)
        missing = [p for p in missing if p != canvas_old]
    if complete:
        for path in missing:
            sid = path_to_section.get(path)
            if sid is not None and sid not in by_id:
                delete_sections.add(sid)
        report.removed_files = missing
    else:
        report.retained_missing_files = missing
    if delete_sections:
        placeholders = ",".join("?" * len(delete_sections))
        report.items_deleted += conn.execute(
            f"SELECT COUNT(*) FROM items WHERE source_id=? AND section_id IN ({placeholders})",
            (source_id, *delete_sections),
        ).fetchone()[0]
        conn.execute(f"DELETE FROM sections WHERE source_id=? AND section_id IN ({placeholders})",
                     (source_id, *delete_sections))

    # 4. Files.
    gone_files = set(report.removed_files) | renamed_from | set(report.replaced_canvas_files)
    if gone_files:
        conn.executemany("DELETE FROM files WHERE source_id=? AND file_path=?", [(source_id, p) for p in gone_files])
    for path, digest in hashes.items():
        old = existing.get(path)
        kind = "canvas" if path.endswith(".canvas") else "section"
        if old is None:
            conn.execute("INSERT INTO files (source_id, file_path, kind, sha256) VALUES (?, ?, ?, ?)",
                         (source_id, path, kind, digest))
        elif old != (kind, digest):
            conn.execute("UPDATE files SET kind=?, sha256=?, revision=revision+1 WHERE source_id=? AND file_path=?",
                         (kind, digest, source_id, path))

    # 5. Copy anchors, canvas layout and file-node bindings.
    supplied_ids = set(by_id)
    unresolved = _resolve_anchors(conn, source_id, supplied_ids, report)
    if canvas_in is not None and existing.get(canvas_in) != ("canvas", hashes[canvas_in]):
        canvas = parse_canvas(files[canvas_in], canvas_in)
        report.warnings.extend(canvas.warnings)
        _write_canvas(conn, source_id, canvas)
        if canvas_in not in report.changed_files:
            report.changed_files.append(canvas_in)
    elif canvas_in is not None:
        report.skipped_files.append(canvas_in)
    elif complete and canvas_old is not None:
        for table in ("nodes", "edges", "memberships"):
            conn.execute(f"DELETE FROM {table} WHERE source_id=?", (source_id,))
        report.changed = True
    report.changed = report.changed or bool(report.changed_files or delete_sections or gone_files)
    unresolved += _bind_file_nodes(conn, source_id, canvas_in is not None, report)
    if complete and unresolved:
        raise InvalidInputError(
            "complete sync refused: the package references missing files "
            f"({'; '.join(unresolved[:3])}); the previous index is kept until all files agree"
        )
    return report


def _upsert_section(conn: sqlite3.Connection, source_id: str, s: ParsedSection) -> None:
    values = (s.file_path, s.section_type, s.kind, s.slot, s.label, s.title, s.description_md, int(s.is_anchor),
              s.inherit_ref, dumps(s.header_raw))
    old = conn.execute(
        "SELECT file_path, section_type, kind, slot, label, title, description_md, is_anchor, inherit_ref, raw_json "
        "FROM sections WHERE source_id=? AND section_id=?", (source_id, s.section_id)).fetchone()
    if old is None:
        conn.execute(
            "INSERT INTO sections (source_id, section_id, file_path, section_type, kind, slot, label, title, "
            "description_md, is_anchor, inherit_ref, raw_json, canonical_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (source_id, s.section_id, *values, None if s.is_anchor else s.section_id))
    elif tuple(old) != values:
        bump = 1 if tuple(old[1:]) != values[1:] else 0
        conn.execute(
            "UPDATE sections SET file_path=?, section_type=?, kind=?, slot=?, label=?, title=?, description_md=?, "
            "is_anchor=?, inherit_ref=?, raw_json=?, revision=revision+? WHERE source_id=? AND section_id=?",
            (*values, bump, source_id, s.section_id))


def _resolve_anchors(conn: sqlite3.Connection, source_id: str, supplied: set[str], report: IndexReport) -> list[str]:
    rows = conn.execute(
        "SELECT section_id, file_path, is_anchor, inherit_ref, inherit_path, canonical_id, section_type "
        "FROM sections WHERE source_id=?", (source_id,)).fetchall()
    by_path = {r[1]: r[0] for r in rows}
    info = {r[0]: r for r in rows}
    unresolved: list[str] = []
    for sid, path, is_anchor, ref, old_inherit, old_canonical, _ in rows:
        if not is_anchor:
            continue
        target_path = resolve_reference(ref, f"{path}: field inheritFrom", by_path)
        canonical, inherit_path = None, target_path
        if target_path is not None:
            seen = [sid]
            current = by_path[target_path]
            while info[current][2]:  # follows chains of anchors
                if current in seen:
                    raise InvalidInputError(f"{path}: field inheritFrom: copy-anchor inheritance cycle ({' -> '.join(seen + [current])})")
                seen.append(current)
                nxt = resolve_reference(info[current][3], f"{info[current][1]}: field inheritFrom", by_path)
                if nxt is None:
                    current = None
                    break
                current = by_path[nxt]
            if current is not None and info[current][6] != "permanent":
                raise InvalidInputError(f"{path}: field inheritFrom: a copy anchor must inherit a permanent section")
            canonical = current
        if canonical is None:
            if sid not in supplied and old_canonical in info and not info[old_canonical][2]:
                canonical, inherit_path = old_canonical, old_inherit
                report.warnings.append(f"Retained copy-anchor uses prior file reference: {sid} ({ref})")
            else:
                message = f"Unresolved copy-anchor target: {sid} inherits {ref!r}, which is not in the package"
                report.warnings.append(message)
                unresolved.append(message)
        if (canonical, inherit_path) != (old_canonical, old_inherit):
            conn.execute("UPDATE sections SET canonical_id=?, inherit_path=? WHERE source_id=? AND section_id=?",
                         (canonical, inherit_path, source_id, sid))
    return unresolved


def _diff_rows(conn: sqlite3.Connection, table: str, key: str, source_id: str,
               rows: list[tuple[str, dict[str, Any]]]) -> None:
    """Insert, update (revision + 1 when ``raw_json`` changed) or delete canvas rows by id.

    ``rows`` holds (id, columns); a row whose canvas path, position and raw JSON are unchanged is untouched.
    """
    old = {r[0]: r[1:] for r in conn.execute(
        f"SELECT {key}, canvas_path, position, raw_json FROM {table} WHERE source_id=?", (source_id,))}
    for row_id, values in rows:
        before = old.get(row_id)
        cols = list(values)
        if before is None:
            conn.execute(f"INSERT INTO {table} (source_id, {key}, {', '.join(cols)}) "
                         f"VALUES ({', '.join('?' * (len(cols) + 2))})", (source_id, row_id, *values.values()))
        elif before != (values["canvas_path"], values["position"], values["raw_json"]):
            bump = int(before[2] != values["raw_json"])
            conn.execute(f"UPDATE {table} SET {', '.join(c + '=?' for c in cols)}, revision=revision+? "
                         f"WHERE source_id=? AND {key}=?", (*values.values(), bump, source_id, row_id))
    seen = {row_id for row_id, _ in rows}
    conn.executemany(f"DELETE FROM {table} WHERE source_id=? AND {key}=?",
                     [(source_id, row_id) for row_id in old.keys() - seen])


def _write_canvas(conn: sqlite3.Connection, source_id: str, canvas: ParsedCanvas) -> None:
    path = canvas.file_path
    _diff_rows(conn, "nodes", "node_id", source_id, [
        (n.node_id, {"canvas_path": path, "node_type": n.node_type, "position": n.position, "file_ref": n.file_ref,
                     "file_candidates_json": dumps(n.file_candidates), "label": n.label, "text": n.text,
                     "color": n.color, "x": n.x, "y": n.y, "width": n.width, "height": n.height,
                     "raw_json": dumps(n.raw)})
        for n in canvas.nodes])
    _diff_rows(conn, "edges", "edge_id", source_id, [
        (e.edge_id, {"canvas_path": path, "position": e.position, "from_node": e.from_node, "to_node": e.to_node,
                     "from_end": e.from_end, "to_end": e.to_end, "label": e.label, "raw_json": dumps(e.raw)})
        for e in canvas.edges])
    conn.execute("DELETE FROM memberships WHERE source_id=?", (source_id,))
    conn.executemany("INSERT INTO memberships (source_id, group_id, node_id) VALUES (?, ?, ?)",
                     [(source_id, g, n) for g, n in memberships(canvas.nodes)])


def _bind_file_nodes(conn: sqlite3.Connection, source_id: str, canvas_supplied: bool, report: IndexReport) -> list[str]:
    """Point file nodes at sections by package path.

    A supplied canvas always binds by its real paths; when only cards were supplied (a partial
    export that moved a card), a node keeps its prior binding, with a warning.
    """
    import json

    by_path = {p: sid for sid, p in conn.execute(
        "SELECT section_id, file_path FROM sections WHERE source_id=?", (source_id,))}
    unresolved: list[str] = []
    for node_id, file_ref, candidates_json, old_path, old_sid in conn.execute(
        "SELECT node_id, file_ref, file_candidates_json, file_path, section_id FROM nodes "
        "WHERE source_id=? AND node_type='file'", (source_id,)).fetchall():
        candidates = json.loads(candidates_json)
        if not candidates:
            continue
        path = next((c for c in candidates if c in by_path), None)
        sid = by_path.get(path) if path else None
        if sid is None:
            if not canvas_supplied and old_sid is not None and old_sid in by_path.values():
                report.warnings.append(f"Retained canvas uses prior file reference: {file_ref} (node {node_id})")
                continue
            path = candidates[0]
            message = f"Unresolved canvas file: {path} (node {node_id})"
            report.warnings.append(message)
            unresolved.append(message)
        if (path, sid) != (old_path, old_sid):
            conn.execute("UPDATE nodes SET file_path=?, section_id=? WHERE source_id=? AND node_id=?",
                         (path, sid, source_id, node_id))
    return unresolved
