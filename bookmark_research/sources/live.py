"""Freshness of live sources: a cheap stat/hash check, debounce, deletion grace and safe states.

A live source is a package folder that keeps changing. :func:`refresh` compares the folder with
what was last ingested (file stats first, hashes only for files whose stats moved) and decides:

- ``current``: the index matches the folder (or was just re-synced from it);
- ``pending``: changes were seen but are not applied yet (settling, a deletion inside its grace
  period, or a Git lock file present);
- ``unavailable``: the folder is missing or holds no package files; the last good index is kept;
- ``error``: the folder holds an invalid package; the last good index is kept, the error reported.

Nothing a half-written or vanished file does replaces good data: a failed re-sync leaves the
index, history and snapshots as they were.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookmark_research.canvas.layout import PROTOCOL_FOLDERS
from bookmark_research.clock import iso
from bookmark_research.core.app import App
from bookmark_research.errors import BookmarkResearchError
from bookmark_research.index.db import transaction
from bookmark_research.index.status import require_source

GIT_LOCKS = ("index.lock", "HEAD.lock", "packed-refs.lock", "shallow.lock")
DEFAULT_DEBOUNCE = 2.0
DEFAULT_DELETION_GRACE = 5.0
PUBLIC_RECORD_KEYS = ("pending_files", "pending_since", "error", "checked_at")
HEARTBEAT = "watcher.json"  # written by a running watcher (``watch`` or ``serve``) in the data directory
HEARTBEAT_SECONDS = 15.0


@dataclass(frozen=True)
class Timing:
    debounce: float = DEFAULT_DEBOUNCE
    deletion_grace: float = DEFAULT_DELETION_GRACE


def git_dirs(folder: Path) -> list[Path]:
    """The Git directories (and common dir) governing ``folder``, if it is inside a work tree."""
    for candidate in (folder, *folder.parents):
        marker = candidate / ".git"
        try:
            if marker.is_dir():
                return [marker]
            if marker.is_file() and marker.stat().st_size <= 4096:
                text = marker.read_text(encoding="utf-8", errors="replace").strip()
                if text.startswith("gitdir:"):
                    gitdir = (candidate / text[7:].strip()).resolve()
                    dirs = [gitdir]
                    common = gitdir / "commondir"
                    if common.is_file():
                        dirs.append((gitdir / common.read_text(encoding="utf-8").strip()).resolve())
                    return dirs
        except OSError:
            return []
    return []


def git_busy(folder: Path) -> bool:
    return any((d / lock).exists() for d in git_dirs(folder) for lock in GIT_LOCKS)


def scan(root: Path) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every package file: the root ``.canvas`` and JSON under protocol folders."""
    out: dict[str, tuple[int, int]] = {}
    try:
        entries = list(os.scandir(root))
    except OSError:
        return out
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            if entry.name.endswith(".canvas") and entry.is_file():
                st = entry.stat()
                out[_printable(entry.name)] = (st.st_mtime_ns, st.st_size)
            elif entry.name in PROTOCOL_FOLDERS and entry.is_dir():
                for dirpath, dirnames, filenames in os.walk(entry.path):
                    dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                    for name in filenames:
                        if name.lower().endswith(".json") and not name.startswith("."):
                            full = os.path.join(dirpath, name)
                            st = os.stat(full, follow_symlinks=False)
                            out[_printable(Path(full).relative_to(root).as_posix())] = (st.st_mtime_ns, st.st_size)
        except OSError:
            continue
    return out


def _printable(rel: str) -> str:
    """A name that is not UTF-8 is kept escaped (it can be stored and shown; the sync reports it)."""
    try:
        rel.encode("utf-8")
        return rel
    except UnicodeEncodeError:
        return os.fsencode(rel).decode("utf-8", errors="backslashreplace")


def _sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def observe(stats: dict[str, tuple[int, int]], hashes: dict[str, str]) -> dict[str, list[Any]]:
    """What a successful ingest saw: path → [mtime_ns, size, sha256], from stats :func:`scan` took
    *before* the files were read (a save during the read then differs from them and is re-checked)."""
    return {p: [*stats[p], h] for p, h in hashes.items() if p in stats}


def _load(conn: Any, source_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    row = conn.execute("SELECT mode, completeness, state, input_path, version_id, record_json FROM sources "
                       "WHERE source_id=?", (source_id,)).fetchone()
    rec = dict(zip(("mode", "completeness", "state", "input_path", "version_id"), row[:5]))
    return rec, json.loads(row[5] or "{}")


def _save(app: App, source_id: str, state: str, record: dict[str, Any]) -> None:
    conn = app.connect()
    with transaction(conn):
        conn.execute("UPDATE sources SET state=?, record_json=? WHERE source_id=?",
                     (state, json.dumps(record, ensure_ascii=False), source_id))


def _result(source_id: str, rec: dict[str, Any], state: str, record: dict[str, Any], performed: bool = False,
            sync: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"source_id": source_id, "mode": rec["mode"], "state": state, "performed": performed,
            "version_id": (sync or rec).get("version_id"), "pending_files": record.get("pending_files", []),
            "error": record.get("error"), "checked_at": record.get("checked_at"), "sync": sync}


def refresh(app: App, source_id: str, *, force: bool = False, timing: Timing = Timing(),
            now: float | None = None) -> dict[str, Any]:
    """Bring a live source up to date with its folder, within the debounce and deletion-grace rules.

    ``force`` (query time) applies settled-or-not edits at once; deletions still wait for their grace.
    """
    from bookmark_research.sources.manager import sync_package

    conn = app.connect(create=False)
    require_source(conn, source_id)
    rec, record = _load(conn, source_id)
    if rec["mode"] != "live":
        return _result(source_id, rec, rec["state"], {})
    now = time.time() if now is None else now
    root = Path(rec["input_path"])
    old_state = rec["state"]
    base = {k: v for k, v in record.items() if k not in ("pending_files", "pending_since", "pending_fingerprint",
                                                         "error")}
    base["checked_at"] = iso(now)

    def settle(state: str, **extra: Any) -> dict[str, Any]:
        new = {**base, **{k: v for k, v in extra.items() if v is not None}}
        if state != old_state or {k: new.get(k) for k in PUBLIC_RECORD_KEYS[:3]} != {
                k: record.get(k) for k in PUBLIC_RECORD_KEYS[:3]} or new.get("observed") != record.get("observed"):
            _save(app, source_id, state, new)
        return _result(source_id, rec, state, new)

    if not root.is_dir():
        return settle("unavailable", error=f"{root} is missing; the last good index is kept")
    if git_busy(root):
        return settle("pending", error="Git is updating this folder (a lock file is present); waiting for it",
                      pending_files=record.get("pending_files") or [])
    stats = scan(root)
    if not stats:
        return settle("unavailable", error=f"{root} holds no Bookmark Canvas files (emptied?); the last good index is kept")
    observed: dict[str, list[Any]] = record.get("observed") or {}
    changed: list[str] = []
    refreshed: dict[str, list[Any]] = {}
    for path, st in stats.items():
        seen = observed.get(path)
        if seen is not None and (seen[0], seen[1]) == st:
            refreshed[path] = seen
            continue
        digest = _sha(root / path)
        if seen is not None and digest == seen[2]:
            refreshed[path] = [*st, digest]  # touched, not changed
            continue
        changed.append(path)
    removed = sorted(observed.keys() - stats.keys())
    if not changed and not removed:
        base["observed"] = refreshed
        return settle("current")

    pending = sorted(changed) + removed
    fingerprint = hashlib.sha256(json.dumps(sorted(stats.items())).encode()).hexdigest()
    since = record.get("pending_since_ts") if record.get("pending_fingerprint") == fingerprint else None
    since = now if since is None else since
    deletion = bool(removed) and rec["completeness"] == "complete"
    delay = timing.deletion_grace if deletion else timing.debounce
    if not ((force and not deletion) or now - since >= delay):
        base["pending_since_ts"] = since
        return settle("pending", pending_files=pending, pending_since=iso(since), pending_fingerprint=fingerprint)

    base.pop("pending_since_ts", None)
    try:
        result = sync_package(app, str(root), source_id=source_id, mode="live")
    except BookmarkResearchError as exc:
        state = "unavailable" if not scan(root) or not root.is_dir() else "error"
        return settle(state, error=f"{exc.message}; the last good index is kept", pending_files=pending)
    _, record = _load(conn, source_id)
    if scan(root) != stats:  # the folder moved on while it was being read: look again soon
        record["pending_files"] = pending
        _save(app, source_id, "pending", record)
        return _result(source_id, rec, "pending", record, performed=True, sync=result)
    return _result(source_id, rec, "current", record, performed=True, sync=result)


def watcher_status(data_dir: Path) -> dict[str, Any]:
    """Whether some process is watching live sources of this data directory right now."""
    try:
        data = json.loads((data_dir / HEARTBEAT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"running": False}
    pid = data.get("pid")
    alive = isinstance(pid, int) and _pid_alive(pid) and time.time() - data.get("heartbeat_at", 0) < 3 * HEARTBEAT_SECONDS
    return {**data, "running": bool(alive)}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
