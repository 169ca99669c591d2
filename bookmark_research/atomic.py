"""Durable writes: the one way this project puts a file or a folder in place.

A file is written to a temporary name in the same directory, flushed and fsynced, renamed over the
target, and the directory is fsynced so the rename itself survives a power loss. A folder is staged
under a temporary name, every file and folder in it fsynced, then renamed into place the same way.
Readers therefore see either the old content or the complete new content, never a torn file.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

STAGING_PREFIX = ".staging-"  # folders being written by :func:`staging_dir`, renamed by :func:`publish_dir`
TEMP_SUFFIX = ".tmp"  # files being written by :func:`write_bytes` (``.<name>.<random>.tmp``)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Flush a directory entry (a rename or a new file inside it) to disk; a no-op where unsupported."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o600, sync_dir: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically and durably (temp file, fsync, rename, fsync dir).

    ``sync_dir=False`` leaves the directory fsync to the caller, who writes several files into one
    directory and then calls :func:`fsync_dir` once (the renames are durable only after that call).
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TEMP_SUFFIX, dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync_dir:
        fsync_dir(target.parent)


def write_text(path: str | os.PathLike[str], text: str, *, mode: int = 0o600) -> None:
    """:func:`write_bytes` for UTF-8 text (line endings kept exactly as given)."""
    write_bytes(path, text.encode("utf-8"), mode=mode)


def dump_json(data: Any) -> str:
    """The project's JSON file format: 2-space indent, UTF-8 kept, no NaN, trailing newline."""
    return json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def write_json(path: str | os.PathLike[str], data: Any, *, mode: int = 0o600) -> None:
    """Write ``data`` as :func:`dump_json` text, atomically and durably."""
    write_text(path, dump_json(data), mode=mode)


def fsync_tree(root: str | os.PathLike[str]) -> None:
    """fsync every regular file and directory under ``root`` (before publishing a staged folder)."""
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(folder)


def publish_dir(staging: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Make a fully written ``staging`` folder appear at ``target`` in one durable rename.

    ``target`` must not exist (publication never overwrites); on failure ``staging`` is removed.
    """
    try:
        fsync_tree(staging)
        if os.path.lexists(target):
            raise FileExistsError(f"{target} already exists")
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    fsync_dir(Path(target).parent)


def staging_dir(parent: str | os.PathLike[str]) -> Path:
    """A new empty folder in ``parent`` to fill and then :func:`publish_dir` (same file system)."""
    return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=parent))


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Delete a folder tree, including read-only files and folders (published snapshots are 0444)."""
    def retry(func: Any, p: str, _exc: Any) -> None:
        try:
            os.chmod(os.path.dirname(p), 0o755)
            if not os.path.islink(p):
                os.chmod(p, 0o755 if os.path.isdir(p) else 0o644)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=retry)


def remove_leftovers(folder: str | os.PathLike[str], before: float, prefixes: tuple[str, ...] = ()) -> list[str]:
    """Remove what an interrupted write left in ``folder``: staging folders, temporary files and
    entries starting with ``prefixes``, all last modified before ``before`` (a ``time.time()``), so
    a write still in progress in another process is never touched. Returns the names removed."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        leftover = name.startswith(STAGING_PREFIX) or name.startswith(prefixes) or (
            name.startswith(".") and name.endswith(TEMP_SUFFIX))
        if not leftover:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if st.st_mtime >= before:
                continue
            if stat.S_ISDIR(st.st_mode):
                remove_tree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(name)
        except OSError:
            continue
    return removed
