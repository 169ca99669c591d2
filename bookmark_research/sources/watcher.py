"""Follow live sources by filesystem events (watchdog), not by polling.

An observer watches every live source's folder (recursively), its parent (to see the folder
vanish and come back) and its Git directory (to see lock files). Events only mark a source as
touched; a scheduler thread re-checks it once changes have settled (debounce) or a deletion's
grace period has passed, using :func:`bookmark_research.sources.live.refresh`. State changes are
reported to a callback and a heartbeat file tells other processes the watcher is running.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from bookmark_research import atomic
from bookmark_research.core.app import App
from bookmark_research.sources.live import HEARTBEAT, HEARTBEAT_SECONDS, Timing, git_dirs, refresh

logger = logging.getLogger("bookmark_research.watcher")
RELOAD_SECONDS = HEARTBEAT_SECONDS  # also re-reads the source list (new live sources from other processes)


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
        self.watches: dict[str, list[tuple[Any, _Touch]]] = {}
        self.identity: dict[str, Any] = {}
        self.roots: dict[str, Path] = {}
        self.due: dict[str, tuple[float, bool]] = {}  # source → (when to check, apply settled changes)
        self.last_event: dict[str, float] = {}
        self.last: dict[str, tuple[Any, ...]] = {}
        self.cond = threading.Condition()
        self.stopping = False
        self.reload_now = False
        self.next_reload = time.monotonic() + RELOAD_SECONDS
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
        self._heartbeat()

    def _unwatch(self, sid: str) -> None:
        # Remove only this source's handlers: two sources may share a parent folder's watch.
        for watch, handler in self.watches.pop(sid, []):
            try:
                self.observer.remove_handler_for_watch(handler, watch)
            except (KeyError, ValueError, OSError):
                pass

    def _ensure_watches(self, sid: str) -> None:
        """Watch the folder (recursively), its parent and its Git dir; re-arm when the folder was replaced.

        A folder deleted and recreated (``git checkout``, an unzip over it) is a new inode whose events
        the old watch never sees, so the watches are keyed by the folder's inode.
        """
        root = self.roots[sid]
        try:
            identity: Any = root.stat().st_ino if root.is_dir() else None
        except OSError:
            identity = None
        if sid in self.watches and self.identity.get(sid) == identity:
            return
        self._unwatch(sid)
        self.identity[sid] = identity
        watches: list[tuple[Any, _Touch]] = []

        def add(path: Path, recursive: bool, parent_only: bool = False) -> None:
            handler = _Touch(self, sid, root, parent_only)
            watches.append((self.observer.schedule(handler, str(path), recursive=recursive), handler))

        try:
            if root.parent.is_dir():
                add(root.parent, recursive=False, parent_only=True)
            if identity is not None:
                add(root, recursive=True)
                for gitdir in git_dirs(root):
                    add(gitdir, recursive=False)
        except OSError as exc:
            logger.warning("cannot watch %s: %s", root, exc)
        self.watches[sid] = watches

    def status(self) -> dict[str, Any]:
        return {"running": self.thread is not None and self.thread.is_alive(), "pid": os.getpid(),
                "mechanism": "filesystem events (watchdog)", "sources": sorted(self.roots),
                "debounce_seconds": self.timing.debounce, "deletion_grace_seconds": self.timing.deletion_grace}

    # --- scheduling ---------------------------------------------------------------------------

    def touch(self, sid: str, delay: float | None = None) -> None:
        """Note activity on a source's folder.

        The first event after a quiet spell gets an immediate look (which reports ``pending``); the
        changes are applied once events have stopped for the debounce interval.
        """
        with self.cond:
            now = time.monotonic()
            self.last_event[sid] = now
            scheduled = self.due.get(sid)
            if delay is not None or scheduled is None:
                self.due[sid] = (now + (delay or 0.0), False)
            elif scheduled[1]:
                self.due[sid] = (now + self.timing.debounce, True)
            self.cond.notify_all()

    def request_reload(self) -> None:
        """Ask the scheduler thread to look for new or removed live sources now."""
        with self.cond:
            self.reload_now = True
            self.cond.notify_all()

    def _next(self) -> tuple[list[tuple[str, bool]], bool] | None:
        """Wait for due checks (or a reload request); ``None`` once stopping."""
        with self.cond:
            while not self.stopping:
                now = time.monotonic()
                ready = sorted((sid, force) for sid, (at, force) in self.due.items() if at <= now)
                if ready or self.reload_now or now >= self.next_reload:
                    for sid, _ in ready:
                        del self.due[sid]
                    reload, self.reload_now = self.reload_now or now >= self.next_reload, False
                    return ready, reload
                wake = min([*(at for at, _ in self.due.values()), self.next_reload])
                self.cond.wait(timeout=max(0.01, wake - now))
            return None

    def _run(self) -> None:
        while (step := self._next()) is not None:
            ready, reload = step
            if reload:
                self.next_reload = time.monotonic() + RELOAD_SECONDS
                self._safely(self.reload)
            for sid, force in ready:
                self._safely(lambda sid=sid, force=force: self._check(sid, force))

    def _safely(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as exc:  # keep watching; the next event retries
            logger.warning("watcher: %s: %s", type(exc).__name__, exc)

    def _check(self, sid: str, force: bool) -> None:
        if sid not in self.roots:
            return
        # ``force`` only after events have been quiet for the debounce interval: apply settled edits now
        # (deletions still wait for their grace period inside refresh).
        result = refresh(self.app, sid, timing=self.timing, force=force)
        self._ensure_watches(sid)
        if result["state"] == "pending":
            with self.cond:
                if sid not in self.due:
                    now = time.monotonic()
                    settled = self.last_event.get(sid, now) + self.timing.debounce
                    retry = now + min(self.timing.debounce, self.timing.deletion_grace) / 2
                    self.due[sid] = (max(settled, retry), True)
                    self.cond.notify_all()
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
        atomic.write_json(path, {**self.status(), "running": True, "started_at": self.started_at,
                                 "heartbeat_at": time.time()})
