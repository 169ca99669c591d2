"""Follow live sources by filesystem events (watchdog), not by polling.

An observer watches every live source's folder (recursively), its parent (to see the folder
vanish and come back) and its Git directory (to see lock files). Events only mark a source as
touched; a scheduler thread re-checks it once changes have settled (debounce) or a deletion's
grace period has passed, using :func:`bookmark_research.sources.live.refresh`. State changes are
reported to a callback and a heartbeat file tells other processes the watcher is running.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from bookmark_research.core.app import App
from bookmark_research.sources.live import HEARTBEAT, HEARTBEAT_SECONDS, Timing, git_dirs, refresh

logger = logging.getLogger("bookmark_research.watcher")
RELOAD_SECONDS = 30.0


class _Touch(FileSystemEventHandler):
    def __init__(self, watcher: SourceWatcher, source_id: str, root: Path, parent_only: bool = False) -> None:
        self.watcher, self.source_id, self.root, self.parent_only = watcher, source_id, root, parent_only

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if self.parent_only:  # the parent folder: only the package folder itself matters
            paths = {str(event.src_path), str(getattr(event, "dest_path", "") or "")}
            if str(self.root) not in paths:
                return
        self.watcher.touch(self.source_id)


class SourceWatcher:
    def __init__(self, data_dir: str | Path | None = None, timing: Timing = Timing(), sources: list[str] | None = None,
                 on_change: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.app = App(data_dir)
        self.timing = timing
        self.only = set(sources or [])
        self.on_change = on_change
        self.observer: Any = None
        self.watches: dict[str, list[Any]] = {}
        self.roots: dict[str, Path] = {}
        self.due: dict[str, float] = {}
        self.last: dict[str, tuple[Any, ...]] = {}
        self.cond = threading.Condition()
        self.stopping = False
        self.thread: threading.Thread | None = None
        self.started_at = time.time()

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> SourceWatcher:
        self.observer = Observer()
        self.observer.daemon = True
        self.observer.start()
        self.reload()
        self.thread = threading.Thread(target=self._run, name="bookmark-research-watcher", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        if self.thread is not None:
            self.thread.join(timeout=10)
        if self.observer is not None:
            self.observer.stop()
            self.observer.join(timeout=10)
        try:
            (self.app.data_dir / HEARTBEAT).unlink(missing_ok=True)
        except OSError:
            pass
        self.app.close()

    def __enter__(self) -> SourceWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- sources and watches --------------------------------------------------------------------

    def live_sources(self) -> dict[str, Path]:
        conn = self.app.connect(create=False)
        if conn is None:
            return {}
        rows = conn.execute("SELECT source_id, input_path FROM sources WHERE mode='live' ORDER BY source_id").fetchall()
        return {sid: Path(path) for sid, path in rows if not self.only or sid in self.only}

    def reload(self) -> None:
        """Pick up live sources added or removed since the last look (e.g. by a sync in another process)."""
        current = self.live_sources()
        for sid in set(self.roots) - set(current):
            self._unwatch(sid)
            self.roots.pop(sid, None)
        for sid, root in current.items():
            if self.roots.get(sid) != root:
                self._unwatch(sid)
                self.roots[sid] = root
                self.touch(sid, delay=0.0)
            self._ensure_watches(sid)

    def _unwatch(self, sid: str) -> None:
        for watch in self.watches.pop(sid, []):
            try:
                self.observer.unschedule(watch)
            except (KeyError, ValueError, OSError):
                pass

    def _ensure_watches(self, sid: str) -> None:
        root = self.roots[sid]
        watching = self.watches.get(sid, [])
        alive = [w for w in watching if Path(w.path).exists()]
        if len(alive) == len(watching) and (len(watching) >= 2 or not root.is_dir()) and watching:
            return
        self._unwatch(sid)
        watches = []
        try:
            if root.parent.is_dir():
                watches.append(self.observer.schedule(_Touch(self, sid, root, parent_only=True), str(root.parent),
                                                      recursive=False))
            if root.is_dir():
                watches.append(self.observer.schedule(_Touch(self, sid, root), str(root), recursive=True))
                for gitdir in git_dirs(root):
                    watches.append(self.observer.schedule(_Touch(self, sid, root), str(gitdir), recursive=False))
        except OSError as exc:
            logger.warning("cannot watch %s: %s", root, exc)
        self.watches[sid] = watches

    def status(self) -> dict[str, Any]:
        return {"running": self.thread is not None and self.thread.is_alive(), "pid": os.getpid(),
                "mechanism": "filesystem events (watchdog)", "sources": sorted(self.roots),
                "debounce_seconds": self.timing.debounce, "deletion_grace_seconds": self.timing.deletion_grace}

    # --- scheduling ---------------------------------------------------------------------------

    def touch(self, sid: str, delay: float | None = None) -> None:
        with self.cond:
            self.due[sid] = time.monotonic() + (self.timing.debounce if delay is None else delay)
            self.cond.notify_all()

    def _run(self) -> None:
        next_reload = time.monotonic() + RELOAD_SECONDS
        next_beat = 0.0
        while True:
            with self.cond:
                if self.stopping:
                    return
                now = time.monotonic()
                ready = [sid for sid, at in self.due.items() if at <= now]
                for sid in ready:
                    del self.due[sid]
                if not ready:
                    wake = min([*self.due.values(), next_reload, next_beat or now])
                    self.cond.wait(timeout=max(0.0, min(wake - now, HEARTBEAT_SECONDS)))
                    if not self.due or min(self.due.values()) > time.monotonic():
                        ready = []
            now = time.monotonic()
            if now >= next_beat:
                self._heartbeat()
                next_beat = now + HEARTBEAT_SECONDS
            if now >= next_reload:
                self._safely(self.reload)
                next_reload = now + RELOAD_SECONDS
            for sid in ready:
                self._safely(lambda sid=sid: self._check(sid))

    def _safely(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as exc:  # keep watching; the next event retries
            logger.warning("watcher: %s: %s", type(exc).__name__, exc)

    def _check(self, sid: str) -> None:
        if sid not in self.roots:
            return
        result = refresh(self.app, sid, timing=self.timing)
        self._ensure_watches(sid)
        if result["state"] == "pending":  # look again when the debounce or the grace period ends
            self.touch(sid, delay=min(self.timing.debounce, self.timing.deletion_grace) / 2 or 0.05)
        key = (result["state"], result["version_id"], tuple(result["pending_files"]), result["error"])
        if self.last.get(sid) != key or result["performed"]:
            self.last[sid] = key
            if self.on_change is not None:
                self.on_change({"event": "state", "at": time.time(), **{k: v for k, v in result.items() if k != "sync"},
                                "items_inserted": (result["sync"] or {}).get("items_inserted", 0),
                                "items_updated": (result["sync"] or {}).get("items_updated", 0),
                                "items_deleted": (result["sync"] or {}).get("items_deleted", 0)})

    def _heartbeat(self) -> None:
        path = self.app.data_dir / HEARTBEAT
        if not self.app.data_dir.is_dir():
            return
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({**self.status(), "running": True, "started_at": self.started_at,
                                   "heartbeat_at": time.time()}), encoding="utf-8")
        os.replace(tmp, path)
