"""The source lifecycle: sync (identity, mode, completeness, snapshot, history), restore and remove."""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any

from bookmark_research.canvas.layout import CANONICAL_FOLDER, path_language
from bookmark_research.canvas.sections import default_section_id, section_header
from bookmark_research.canvas.strictjson import load_object
from bookmark_research.clock import iso
from bookmark_research.core.app import App
from bookmark_research.errors import ConflictError, InvalidInputError, NotFoundError, StorageError
from bookmark_research.failpoints import crash_point
from bookmark_research.index import schema
from bookmark_research.index.db import transaction
from bookmark_research.index.status import require_source, store_counts
from bookmark_research.index.writer import Progress, sha256_hex, sync_index
from bookmark_research.sources import snapshots
from bookmark_research.sources.live import git_busy, observe, scan
from bookmark_research.sources.reader import PackageInput, read_input

MODES = ("snapshot", "live")
COMPLETENESS = ("partial", "complete")


def in_git_worktree(path: Path) -> bool:
    for folder in (path, *path.parents):
        marker = folder / ".git"
        if marker.is_dir():
            return True
        if marker.is_file():
            try:
                return marker.stat().st_size <= 4096 and marker.read_text(encoding="utf-8", errors="replace").startswith("gitdir:")
            except OSError:
                return False
    return False


def check_source_id(source_id: str) -> str:
    if not source_id.strip() or "\x00" in source_id or len(source_id) > 512 or any(c in source_id for c in "\r\n\t"):
        raise InvalidInputError(f"source_id {source_id!r}: must be 1-512 printable characters")
    return source_id


def _derive_source_id(conn: Any, input_path: Path) -> str:
    stem = input_path.stem if input_path.suffix.lower() in (".zip", ".json") else input_path.name
    slug = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")[:40] or "source"
    base = f"{slug}-{hashlib.sha256(str(input_path).encode('utf-8')).hexdigest()[:6]}"
    candidate, n = base, 2
    while conn.execute("SELECT 1 FROM sources WHERE source_id=?", (candidate,)).fetchone():
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def _lookup_by_path(conn: Any, input_path: Path) -> str | None:
    ids = {r[0] for r in conn.execute(
        "SELECT source_id FROM source_aliases WHERE input_path=? UNION "
        "SELECT source_id FROM sources WHERE package_path=? UNION "
        "SELECT source_id FROM source_versions WHERE snapshot_path || '/package' = ?",
        (str(input_path), str(input_path), str(input_path)))}
    if len(ids) > 1:
        raise ConflictError(
            f"{input_path}: multiple sources use this path ({', '.join(sorted(ids))}); pass --source-id / source_id"
        )
    return next(iter(ids), None)


def _card_path(conn: Any, source_id: str | None, name: str, data: bytes) -> str:
    """Where a single card lives in the package: its known path, else the source's protocol folder."""
    raw = load_object(data, name)
    header = section_header(raw, name)
    sid = default_section_id(header)
    if source_id is not None and sid:
        row = conn.execute("SELECT file_path FROM sections WHERE source_id=? AND section_id=?", (source_id, sid)).fetchone()
        if row:
            return row[0]
    language = "en"
    if source_id is not None:
        row = conn.execute("SELECT file_path FROM files WHERE source_id=? AND kind='section' LIMIT 1", (source_id,)).fetchone()
        if row:
            language = path_language(row[0])
    return f"{CANONICAL_FOLDER[language][header.sectionType]}/{name}"


def sync_package(
    app: App,
    package_path: str,
    source_id: str | None = None,
    mode: str | None = None,
    completeness: str | None = None,
    progress: Progress | None = None,
    restoring: bool = False,
) -> dict[str, Any]:
    """Import a package directory, ZIP or section JSON into a source; one transaction, all or nothing.

    ``restoring`` (from :func:`restore`): the input is one of the source's own snapshots, mirrored
    completely, but the source keeps the completeness and input path its user last set, and the
    restore is logged for ``history``.
    """
    if source_id is not None:
        check_source_id(source_id)
    # File stats are taken before the files are read: a save while the sync reads then shows up as a
    # newer stat next to the older hash, so the next freshness check sees it (never the other way round).
    given = Path(package_path).expanduser()
    seen_stats = scan(given) if mode != "snapshot" and given.is_dir() else {}
    pkg = read_input(package_path, app.limits)
    manifest = snapshots.recognise(pkg.input_path) if pkg.input_kind == "directory" else None
    if manifest is not None:
        snapshots.verify(pkg.input_path, manifest.get("files") or {}, pkg.files)
        if mode == "live":
            raise InvalidInputError(f"{pkg.input_path}: managed snapshots are immutable; use --mode snapshot")
    if pkg.single_card:
        if completeness == "complete":
            raise InvalidInputError(f"{pkg.input_path.name}: a single card is a partial export; use --completeness partial")
        if mode == "live":
            raise InvalidInputError(f"{pkg.input_path.name}: live sources require a package directory")
    if pkg.input_kind == "directory" and mode != "snapshot" and in_git_worktree(pkg.input_path):
        if git_busy(pkg.input_path):
            raise ConflictError(f"{pkg.input_path}: Git is updating this folder (a lock file is present); "
                                "retry once it has finished")
    if mode == "live" and pkg.input_kind != "directory":
        raise InvalidInputError(f"{pkg.input_path.name}: live sources require a package directory, not a {pkg.input_kind}")

    crash_point("sync:read")
    conn = app.connect()
    assert conn is not None
    started = time.time()
    created: list[Path] = []  # a version folder this sync published, deleted again if it does not commit
    try:
        with transaction(conn):
            _sweep(app, conn, started)
            result = _sync_locked(app, conn, pkg, manifest, source_id, mode, completeness, progress, restoring,
                                  created, seen_stats)
            crash_point("sync:before-commit")
    except BaseException:
        for path in created:
            snapshots.remove_tree(path)
        raise
    crash_point("sync:committed")
    return result


def _sweep(app: App, conn: Any, before: float) -> None:
    """Remove what interrupted syncs left in the snapshot store (we hold the write lock: nobody else
    is publishing): staging folders, folders moved aside, and version folders no history row knows."""
    referenced: dict[str, set[str]] = {}
    for sid, vid in conn.execute("SELECT source_id, version_id FROM source_versions"):
        referenced.setdefault(snapshots.source_key(sid), set()).add(vid)
    try:
        app.snapshots.sweep(referenced, before)
    except OSError:
        pass  # best effort: the next sync tries again


def _sync_locked(app: App, conn: Any, pkg: PackageInput, manifest: dict[str, Any] | None, source_id: str | None,
                 mode: str | None, completeness: str | None, progress: Progress | None,
                 restoring: bool, created: list[Path], seen_stats: dict[str, tuple[int, int]]) -> dict[str, Any]:
    input_path = pkg.input_path
    if source_id is None:
        source_id = _lookup_by_path(conn, input_path)
        if source_id is None and manifest is not None and isinstance(manifest.get("source_id"), str):
            source_id = manifest["source_id"]
    existing = conn.execute("SELECT mode, completeness, version_id, input_path, input_kind FROM sources "
                            "WHERE source_id=?", (source_id,)).fetchone() if source_id else None
    is_new = existing is None
    if source_id is None:
        source_id = _derive_source_id(conn, input_path)
    if mode is None:
        if existing is not None and not (existing[0] == "live" and pkg.input_kind != "directory"):
            mode = existing[0]
        elif pkg.input_kind == "directory" and manifest is None and in_git_worktree(input_path):
            mode = "live"
        else:
            mode = "snapshot"
    if pkg.single_card:
        completeness = "partial"
    elif completeness is None:
        completeness = existing[1] if existing is not None else "partial"

    files = pkg.files
    if pkg.single_card:
        (name, data), = files.items()
        files = {_card_path(conn, None if is_new else source_id, name, data): data}

    stamp = iso()
    if is_new:
        conn.execute(
            "INSERT INTO sources (source_id, mode, completeness, input_path, input_kind, state, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (source_id, mode, completeness, str(input_path), pkg.input_kind, "syncing", stamp))
    report = sync_index(conn, source_id, files, completeness=completeness, progress=progress)
    crash_point("sync:indexed")

    # The new version holds every file the index now describes: supplied ones plus retained ones.
    indexed = dict(conn.execute("SELECT file_path, sha256 FROM files WHERE source_id=?", (source_id,)).fetchall())
    previous_dir = None
    if existing is not None and existing[2]:
        row = conn.execute("SELECT snapshot_path FROM source_versions WHERE source_id=? AND version_id=?",
                           (source_id, existing[2])).fetchone()
        previous_dir = Path(row[0]) / "package" if row else None
    contents: dict[str, bytes] = {}
    for rel, digest in indexed.items():
        if rel in files:
            contents[rel] = files[rel]
            continue
        data = None
        if previous_dir is not None:
            try:
                data = (previous_dir / rel).read_bytes()
            except OSError:
                data = None
        if data is None or sha256_hex(data) != digest:
            raise StorageError(
                f"saved snapshot is missing or changed: {rel}; re-sync the full package or restore a version"
            )
        contents[rel] = data
    version_id = snapshots.version_id_for(indexed)
    snap_manifest = {
        "format": snapshots.FORMAT, "schema_version": 1, "source_id": source_id, "version_id": version_id,
        "created_at": stamp, "input_path": str(input_path), "input_kind": pkg.input_kind,
        "completeness": completeness, "provided_files": sorted(files), "files": dict(sorted(indexed.items())),
    }
    version_dir, created_new = app.snapshots.publish(source_id, version_id, contents, snap_manifest, previous_dir)
    if created_new:
        created.append(version_dir)
    conn.execute(
        "INSERT OR IGNORE INTO source_versions (source_id, version_id, created_at, snapshot_path, input_path, "
        "input_kind, completeness, file_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (source_id, version_id, stamp, str(version_dir), str(input_path), pkg.input_kind, completeness, len(indexed)))
    aliases = set() if restoring else {str(input_path)}
    if existing is not None and existing[3]:
        aliases.add(existing[3])
    conn.executemany("INSERT OR IGNORE INTO source_aliases (source_id, input_path) VALUES (?, ?)",
                     [(source_id, a) for a in aliases])
    # What the source remembers for later syncs: a restore keeps what its user last chose.
    kept_completeness, kept_input, kept_kind = ((existing[1], existing[3], existing[4]) if restoring and existing
                                                else (completeness, str(input_path), pkg.input_kind))
    if restoring:
        conn.execute(schema.EVENTS)  # indexes created before the event log get it now
        conn.execute("INSERT INTO source_events (source_id, at, event, version_id, previous_version_id) "
                     "VALUES (?, ?, 'restore', ?, ?)", (source_id, stamp, version_id, existing[2] if existing else None))
    package_dir = str(input_path) if mode == "live" else str(version_dir / "package")
    state = "current" if mode == "live" else "snapshot"
    record: dict[str, Any] = {}
    if mode == "live":  # what this ingest saw, so freshness checks can tell later edits apart
        record = {"observed": observe(seen_stats, {p: indexed[p] for p in files}), "checked_at": stamp}
    conn.execute(
        "UPDATE sources SET mode=?, completeness=?, input_path=?, input_kind=?, package_path=?, version_id=?, "
        "state=?, last_sync=?, retained_missing_json=?, record_json=? WHERE source_id=?",
        (mode, kept_completeness, kept_input, kept_kind, package_dir, version_id, state, stamp,
         json.dumps(report.retained_missing_files, ensure_ascii=False), json.dumps(record, ensure_ascii=False),
         source_id))

    warnings = pkg.warnings + report.warnings
    duplicates: list[str] = []
    if is_new:
        duplicates = [r[0] for r in conn.execute(
            "SELECT source_id FROM sources WHERE version_id=? AND source_id<>? ORDER BY source_id",
            (version_id, source_id))]
        if duplicates:
            named = ", ".join(duplicates[:3]) + (f" and {len(duplicates) - 3} more" if len(duplicates) > 3 else "")
            warnings.append(
                f"Identical content is already indexed as {named}; reuse --source-id {duplicates[0]} "
                f"for new exports of the same canvas, or remove this source with 'source remove {source_id}'"
            )
    if manifest is not None and not restoring:
        warnings.append(f"Restored managed snapshot {manifest.get('version_id')} of {manifest.get('source_id')}")
    return {
        "source_id": source_id,
        "created": is_new,
        "mode": mode,
        "completeness": kept_completeness,
        "input_path": kept_input,
        "input_kind": kept_kind,
        "package_path": package_dir,
        "version_id": version_id,
        "snapshot_path": str(version_dir / "package"),
        "state": state,
        "changed_files": len(report.changed_files),
        "skipped_files": len(report.skipped_files),
        "changed_file_paths": report.changed_files,
        "items_inserted": report.items_inserted,
        "items_updated": report.items_updated,
        "items_deleted": report.items_deleted,
        "retained_missing_files": report.retained_missing_files,
        "removed_files": report.removed_files,
        "replaced_canvas_files": report.replaced_canvas_files,
        "duplicate_source_ids": duplicates,
        "warnings": warnings,
        "counts": store_counts(conn, source_id, report.changed),
    }


def history(app: App, source_id: str, limit: int = 20, offset: int = 0) -> dict[str, Any]:
    conn = app.connect(create=False)
    require_source(conn, source_id)
    current = conn.execute("SELECT version_id FROM sources WHERE source_id=?", (source_id,)).fetchone()[0]
    total = conn.execute("SELECT COUNT(*) FROM source_versions WHERE source_id=?", (source_id,)).fetchone()[0]
    has_events = conn.execute("SELECT 1 FROM sqlite_master WHERE name='source_events'").fetchone() is not None
    restores = [{"restored_at": at, "version_id": v, "previous_version_id": prev} for at, v, prev in conn.execute(
        "SELECT at, version_id, previous_version_id FROM source_events WHERE source_id=? AND event='restore' "
        "ORDER BY at DESC, rowid DESC LIMIT 100", (source_id,))] if has_events else []
    last_restore: dict[str, str] = {}
    for event in restores:
        last_restore.setdefault(event["version_id"], event["restored_at"])
    versions = [
        {"version_id": v, "created_at": c, "snapshot_path": p + "/package", "current": v == current,
         "file_count": n, "input_path": ip, "input_kind": ik, "completeness": comp,
         "snapshot_exists": Path(p, "package").is_dir(), "restored_at": last_restore.get(v)}
        for v, c, p, n, ip, ik, comp in conn.execute(
            "SELECT version_id, created_at, snapshot_path, file_count, input_path, input_kind, completeness "
            "FROM source_versions WHERE source_id=? ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            (source_id, limit, offset))
    ]
    next_offset = offset + len(versions) if offset + len(versions) < total else None
    return {"source_id": source_id, "total": total, "limit": limit, "offset": offset, "next_offset": next_offset,
            "versions": versions, "restores": restores}


def restore(app: App, source_id: str, version_id: str, progress: Progress | None = None) -> dict[str, Any]:
    """Make a recorded version current again by re-syncing its snapshot as a complete mirror."""
    conn = app.connect(create=False)
    require_source(conn, source_id)
    row = conn.execute("SELECT snapshot_path FROM source_versions WHERE source_id=? AND version_id=?",
                       (source_id, version_id)).fetchone()
    if row is None:
        raise NotFoundError(f"unknown version {version_id!r} of source {source_id!r}; see 'history {source_id}'")
    package = Path(row[0]) / "package"
    if not package.is_dir():
        raise StorageError(f"{package}: the snapshot of {version_id} is missing from the data directory")
    mode = conn.execute("SELECT mode FROM sources WHERE source_id=?", (source_id,)).fetchone()[0]
    if mode == "live":
        raise ConflictError(
            f"{source_id} is a live source that follows its folder; restore into a new source with "
            f"'sync {package} --source-id NEW_ID', or copy the snapshot files back into the folder"
        )
    return sync_package(app, str(package), source_id=source_id, mode="snapshot", completeness="complete",
                        progress=progress, restoring=True)


def remove(app: App, source_id: str, confirm: bool = False) -> dict[str, Any]:
    conn = app.connect(create=False)
    require_source(conn, source_id)

    def count(table: str) -> int:
        return conn.execute(f"SELECT COUNT(*) FROM {table} WHERE source_id=?", (source_id,)).fetchone()[0]

    impact = {t: count(t) for t in ("files", "sections", "items", "nodes", "edges", "memberships")}
    impact["versions"] = count("source_versions")
    aliases = [r[0] for r in conn.execute("SELECT input_path FROM source_aliases WHERE source_id=?", (source_id,))]
    snapshot_dir = app.snapshots.source_dir(source_id)
    if not confirm:
        return {"source_id": source_id, "status": "confirmation_required", "would_remove": impact, "aliases": aliases,
                "snapshot_directory": str(snapshot_dir),
                "impact": f"Deletes {impact['items']} items and {impact['versions']} snapshot versions of {source_id}; "
                          "the original package files are not touched. Repeat with --confirm / confirm=true."}
    removed = _delete_source(app, conn, source_id)
    return {"source_id": source_id, "status": "removed", "removed": impact, "aliases": aliases,
            "snapshot_removed": removed}


def _delete_source(app: App, conn: Any, source_id: str, first: Any = None) -> bool:
    """Delete a source's rows (after ``first()``, in the same transaction), then its snapshots.

    The snapshots go only after the rows are committed, so a crash in between leaves no row pointing
    at a missing folder; the leftover folder is removed by the next sync's sweep. Returns whether a
    snapshot directory existed.
    """
    existed = app.snapshots.source_dir(source_id).exists()
    with transaction(conn):
        if first is not None:
            first()
        conn.execute("DELETE FROM sources WHERE source_id=?", (source_id,))
    crash_point("remove:committed")
    try:
        app.snapshots.retire(source_id)
    except OSError:
        pass  # the rows are gone; the next sync's sweep removes the folder
    return existed


def merge(app: App, source_id: str, into_source_id: str, confirm: bool = False) -> dict[str, Any]:
    """Fold a duplicate source into another holding the same content version (preview unless confirm)."""
    if source_id == into_source_id:
        raise InvalidInputError("source merge needs two different source ids")
    conn = app.connect(create=False)
    require_source(conn, source_id)
    require_source(conn, into_source_id)

    def check() -> list[str]:
        versions = dict(conn.execute("SELECT source_id, version_id FROM sources WHERE source_id IN (?, ?)",
                                     (source_id, into_source_id)).fetchall())
        if versions[source_id] != versions[into_source_id]:
            raise ConflictError(
                f"{source_id} and {into_source_id} hold different content versions; keep one explicitly with "
                f"'source remove' instead of merging"
            )
        return [r[0] for r in conn.execute(
            "SELECT input_path FROM source_aliases WHERE source_id=? UNION SELECT input_path FROM sources "
            "WHERE source_id=? AND input_path IS NOT NULL ORDER BY 1", (source_id, source_id))]

    aliases = check()
    out = {"source_id": source_id, "into_source_id": into_source_id, "aliases": aliases}
    if not confirm:
        return {**out, "status": "confirmation_required",
                "impact": f"{source_id} is removed; its {len(aliases)} path(s) then sync into {into_source_id}. "
                          "Repeat with --confirm / confirm=true."}
    def move_aliases() -> None:
        out["aliases"] = check()  # re-checked inside the write transaction
        conn.executemany("INSERT OR IGNORE INTO source_aliases (source_id, input_path) VALUES (?, ?)",
                         [(into_source_id, a) for a in out["aliases"]])

    _delete_source(app, conn, source_id, first=move_aliases)
    return {**out, "status": "merged"}
