"""Inter-process file locks for records that several processes update (research state, the wiki).

A lock is an exclusive advisory lock on a small lock file next to the record (``.state.json.lock``),
opened without following symlinks and kept on disk. Waiting polls every 50 ms up to ``timeout`` and
then fails with a :class:`~bookmark_research.errors.BusyError`. Locks are held only around a
read-modify-write of the record, never across network I/O.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from bookmark_research.errors import BusyError, StorageError

try:  # POSIX
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

except ImportError:  # pragma: no cover - Windows
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)


@contextlib.contextmanager
def file_lock(path: str | os.PathLike[str], *, timeout: float = 10.0,
              busy_message: str = "the record is being written by another process; retry shortly") -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created 0600 if missing; a symlink is refused)."""
    lock_path = Path(path)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(lock_path, flags, 0o600)
    except OSError as exc:
        raise StorageError(f"{lock_path}: cannot open the lock file ({exc.strerror})") from None
    try:
        deadline = time.monotonic() + timeout
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                raise BusyError(busy_message)
            time.sleep(0.05)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)
