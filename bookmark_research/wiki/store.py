"""The wiki folder: where it is, what may be in it, and verified reads of its records.

Layout (``<wiki>`` is ``wiki.directory`` or ``<data dir>/wiki``, always outside canvas packages)::

    index.json                         authoritative: {"schema_version": 1, "pages": {page_id: pointer}}
    .index.json.lock                   advisory lock taken by every write (kept on disk)
    revisions/<page_id>/<n>-<hex>.json immutable revision record (hash kept in the pointer)
    revisions/<page_id>/<n>-<hex>.md   immutable rendered Markdown of that revision
    pages/<page_id>.md                 current view (derived, regenerated when the page is written)
    evidence/<research_id>/<path>      copies of the saved evidence the pages cite (hash-checked)
    index.md, log.md                   derived catalogue and timeline
    .search/                           derived Whoosh index

No component inside the folder may be a symlink, no stored path may leave it, and the records and the
index are size-limited. A pointer names a record and its Markdown with their SHA-256; a read that does
not match them fails instead of returning edited content.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bookmark_research.errors import NotFoundError, StorageError, UnsafeInputError
from bookmark_research.locks import file_lock
from bookmark_research.paths import checked_store_dir
from bookmark_research.wiki import cache
from bookmark_research.wiki.pages import PAGE_ID_RE

SCHEMA_VERSION = 1
INDEX = "index.json"
LOCK = ".index.json.lock"
MAX_INDEX_BYTES = 8_000_000
MAX_RECORD_BYTES = 900_000
MAX_MARKDOWN_BYTES = MAX_RECORD_BYTES * 4  # a rendered file can be no larger than this (read at most this)
MAX_PAGES = 5_000
POINTER_KEYS = ("revision", "record_file", "sha256", "markdown_file", "markdown_sha256", "view_sha256", "title",
                "kind", "updated_at", "claims", "summary")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
#: Parsed ``index.json`` per wiki folder, reused while the file's identity (inode, size, times) is
#: unchanged; every write replaces the file by rename, so a new index is always read again.
#: Callers treat the returned index as read-only.
_INDEX_CACHE: dict[Path, tuple[Any, dict[str, Any], str]] = {}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def resolve_directory(app: Any) -> Path:
    """``wiki.directory`` from the settings (re-read on every call), else ``<data dir>/wiki``; checked."""
    from bookmark_research.config import settings

    configured = settings.load().wiki.directory
    return checked_store_dir(configured or (app.data_dir / "wiki"), "wiki directory")


def _check_rel(rel: str) -> list[str]:
    parts = rel.split("/")
    if not rel or rel.startswith("/") or "\\" in rel or "\x00" in rel or any(p in ("", ".", "..") for p in parts):
        raise UnsafeInputError(f"Wiki path {rel!r} must stay inside the wiki folder")
    return parts


class Wiki:
    """One wiki folder. Nothing is created until :meth:`create` (the first accepted write)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._root = str(root)
        self._dirs: dict[str, str] = {}  # folders (relative -> absolute) already checked in this operation

    @classmethod
    def open(cls, app: Any) -> Wiki:
        return cls(resolve_directory(app))

    # --- paths -------------------------------------------------------------------------------

    @property
    def exists(self) -> bool:
        return self.root.is_dir()

    def path(self, rel: str) -> Path:
        """``rel`` (POSIX, relative) inside the wiki; refuses escapes and symlinked components."""
        return Path(self.lstat(rel)[0])

    def lstat(self, rel: str) -> tuple[str, os.stat_result | None]:
        """The checked path of ``rel`` (as :meth:`path`) and its own ``lstat`` (None when missing)."""
        head, _, name = rel.rpartition("/")
        parent = self._dirs.get(head)
        if parent is None:
            parent = self._check_dir(head, rel)
            if parent is None:  # a folder on the way does not exist
                return f"{self._root}{os.sep}{os.sep.join(_check_rel(rel))}", None
        if name in ("", ".", "..") or "\\" in name or "\x00" in name:
            raise UnsafeInputError(f"Wiki path {rel!r} must stay inside the wiki folder")
        path = f"{parent}{os.sep}{name}"
        try:
            result = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return path, None
        if stat.S_ISLNK(result.st_mode):
            raise UnsafeInputError(f"{self.root}/{rel}: symlinks are not allowed inside the wiki folder")
        return path, result

    def _check_dir(self, head: str, rel: str) -> str | None:
        """The folder ``head`` inside the wiki, each component checked (remembered once it exists)."""
        if not head:
            return self._root
        known = self._dirs.get(head)
        if known is not None:
            return known
        parent_rel, _, name = head.rpartition("/")
        parent = self._dirs.get(parent_rel) if parent_rel else None if "/" in head else self._root
        if parent is not None:  # the usual case: only the last component is new
            if name in ("", ".", "..") or "\\" in name or "\x00" in name:
                raise UnsafeInputError(f"Wiki path {head!r} must stay inside the wiki folder")
            return self._enter(parent, head, name, rel)
        current, prefix = self._root, ""
        for part in _check_rel(head):
            prefix = f"{prefix}/{part}" if prefix else part
            known = self._dirs.get(prefix)
            if known is not None:
                current = known
                continue
            found = self._enter(current, prefix, part, rel)
            if found is None:
                return None
            current = found
        return current

    def _enter(self, parent: str, prefix: str, part: str, rel: str) -> str | None:
        """``parent/part`` if it is a folder (not a symlink; remembered as ``prefix``), else None."""
        current = f"{parent}{os.sep}{part}"
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(mode):
            raise UnsafeInputError(f"{self.root}/{rel}: symlinks are not allowed inside the wiki folder")
        if not stat.S_ISDIR(mode):
            return None
        self._dirs[prefix] = current
        return current

    def is_file(self, rel: str) -> bool:
        _, st = self.lstat(rel)
        return st is not None and stat.S_ISREG(st.st_mode)

    def create(self) -> None:
        """Make the folder (0700) and its fixed subfolders; refuses symlinks where folders belong."""
        from bookmark_research.atomic import fsync_dir

        missing = []
        folder = self.root
        while not folder.is_dir() and folder.parent != folder:
            missing.append(folder)
            folder = folder.parent
        for folder in reversed(missing):  # each new folder's entry made durable in its parent
            folder.mkdir(mode=0o700 if folder == self.root else 0o777, exist_ok=True)  # ancestors: as the umask says
            fsync_dir(folder.parent)
        for sub in ("revisions", "pages", "evidence"):
            target = self.path(sub)
            if not target.is_dir():
                target.mkdir(mode=0o700, exist_ok=True)
                fsync_dir(self.root)

    def ensure_dir(self, rel: str) -> Path:
        """The folder ``rel``, created if missing (its parent then fsynced, so the new entry is durable)."""
        from bookmark_research.atomic import fsync_dir

        target = self.path(rel)
        missing = []
        folder = target
        while not folder.is_dir() and folder != self.root:
            missing.append(folder)
            folder = folder.parent
        for folder in reversed(missing):
            folder.mkdir(mode=0o700, exist_ok=True)
            fsync_dir(folder.parent)
        self.path(rel)  # re-check: nothing in the chain became a symlink
        return target

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        with file_lock(self.path(LOCK), busy_message="the wiki is being written by another process; retry shortly"):
            yield

    def read_bytes(self, rel: str, limit: int | None = None) -> bytes:
        """The bytes of ``rel`` (no symlink followed); NotFoundError if absent."""
        path = self.path(rel)
        # O_NONBLOCK: a FIFO planted in the folder must not hang the open (it is refused below)
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            raise NotFoundError(f"Wiki file missing: {rel}") from None
        except OSError as exc:
            raise StorageError(f"{path}: cannot read ({exc.strerror})") from None
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise StorageError(f"{path}: not a regular file")
            data = fh.read() if limit is None else fh.read(limit + 1)
        return data

    # --- the index ---------------------------------------------------------------------------

    def load_index(self) -> dict[str, Any]:
        """``index.json`` (an empty index when there is none yet), shape-checked."""
        return self._load_index()[1]

    def index_digest(self) -> str:
        """SHA-256 of the bytes of ``index.json`` ("" when there is none)."""
        return self._load_index()[2]

    def _load_index(self) -> tuple[Any, dict[str, Any], str]:
        path, st = self.lstat(INDEX)
        if st is None:
            return None, {"schema_version": SCHEMA_VERSION, "pages": {}}, ""
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            return None, {"schema_version": SCHEMA_VERSION, "pages": {}}, ""
        except OSError as exc:
            raise StorageError(f"{path}: cannot read ({exc.strerror})") from None
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            cached = _INDEX_CACHE.get(self.root)
            if cached is not None and cached[0] == key:
                return cached
            data = fh.read(MAX_INDEX_BYTES + 1)
        if len(data) > MAX_INDEX_BYTES:
            raise StorageError("Wiki index exceeds its size limit")
        index = _parse_lines(data)
        if index is None:  # not in the one-page-per-line layout this module writes: parse it whole
            index = _parse(data, INDEX)
            if set(index) != {"schema_version", "pages"} or index["schema_version"] != SCHEMA_VERSION \
                    or not isinstance(index["pages"], dict):
                raise StorageError(f"{path}: not a wiki index of schema version {SCHEMA_VERSION}")
            for page_id, pointer in index["pages"].items():
                check_pointer(page_id, pointer, INDEX)
        _INDEX_CACHE[self.root] = (key, index, sha256(data))
        return _INDEX_CACHE[self.root]

    def remember_index(self, index: dict[str, Any], digest: str) -> None:
        """After writing ``index.json`` (under the index lock): keep what was written (``digest``: the
        SHA-256 of its bytes), no re-read needed."""
        st = os.lstat(self.path(INDEX))
        _INDEX_CACHE[self.root] = ((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns), index, digest)

    def pointer(self, page_id: str) -> dict[str, Any]:
        pointer = self.load_index()["pages"].get(page_id)
        if pointer is None:
            raise NotFoundError(f"Unknown Wiki page or revision: no page {page_id} (wiki list shows the pages)")
        return pointer

    # --- records -----------------------------------------------------------------------------

    def read_record(self, page_id: str, pointer: dict[str, Any]) -> dict[str, Any]:
        """The revision record ``pointer`` names, after checking its size, hash, schema and page.

        The result may be shared with other callers (see :mod:`~bookmark_research.wiki.cache`): never
        modify it.
        """
        rel = pointer["record_file"]
        path, st = self.lstat(rel)
        key = (path, pointer["sha256"])
        ident = cache.stat_identity(path, st)
        cached = cache.RECORDS.get(key, ident)
        if cached is not None and cached.get("page_id") == page_id and cached.get("revision") == pointer["revision"]:
            return cached
        data = self.read_bytes(rel, MAX_RECORD_BYTES)
        if len(data) > MAX_RECORD_BYTES or sha256(data) != pointer["sha256"]:
            what = (f"is over {MAX_RECORD_BYTES} bytes" if len(data) > MAX_RECORD_BYTES
                    else "no longer has the SHA-256 its pointer names")
            raise StorageError(f"Wiki revision hash changed: {rel} {what}; revisions are immutable: restore the "
                               "file from a backup or version control (this revision and the ones before it "
                               "cannot be read or updated until then)")
        record = _parse(data, rel)
        if record.get("schema_version") != SCHEMA_VERSION:
            raise StorageError(f"{rel}: not a wiki revision of schema version {SCHEMA_VERSION}")
        if record.get("page_id") != page_id:
            raise StorageError(f"Wiki revision belongs to a different page: {rel}")
        if record.get("revision") != pointer["revision"]:
            raise StorageError(f"Invalid Wiki revision history: {rel}")
        cache.RECORDS.put(key, ident, record)
        return record

    def check_markdown(self, pointer: dict[str, Any]) -> None:
        """Refuse a revision whose rendered Markdown no longer has the hash its pointer names."""
        rel = pointer["markdown_file"]
        path, st = self.lstat(rel)
        key = (path, pointer["markdown_sha256"])
        ident = cache.stat_identity(path, st)
        if cache.MARKDOWN.get(key, ident):
            return
        data = self.read_bytes(rel, MAX_MARKDOWN_BYTES)
        if sha256(data) != pointer["markdown_sha256"]:
            raise StorageError(f"Wiki Markdown hash changed; publish an explicit revision: {rel}")
        cache.MARKDOWN.put(key, ident, True)

    def history(self, page_id: str, pointer: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """``(pointer, record)`` from ``pointer`` back to revision 1, each verified."""
        seen = pointer["revision"] + 1
        while pointer is not None:
            if pointer["revision"] >= seen:
                raise StorageError(f"Invalid Wiki revision history: {pointer['record_file']}")
            record = self.read_record(page_id, pointer)
            yield pointer, record
            seen = pointer["revision"]
            previous = record.get("previous")
            if previous is not None:
                check_pointer(page_id, previous, pointer["record_file"])
            pointer = previous

    def revision(self, page_id: str, revision: int | None) -> tuple[dict[str, Any], dict[str, Any]]:
        """The verified ``(pointer, record)`` of ``revision`` (default: current), Markdown checked too."""
        current = self.pointer(page_id)
        for pointer, record in self.history(page_id, current):
            if revision is None or pointer["revision"] == revision:
                self.check_markdown(pointer)
                return pointer, record
            if pointer["revision"] < revision:
                break
        raise NotFoundError(f"Unknown Wiki page or revision: page {page_id} has revisions 1 to {current['revision']}")


def _parse(data: bytes, rel: str) -> dict[str, Any]:
    from bookmark_research.canvas.strictjson import load_object
    from bookmark_research.errors import InvalidInputError

    try:
        return load_object(data, rel)
    except InvalidInputError as exc:
        raise StorageError(exc.message) from None


def check_pointer(page_id: str, pointer: Any, where: str) -> None:
    """A pointer's keys, types and paths (inside ``revisions/<page_id>/``); StorageError otherwise."""
    ok = (isinstance(pointer, dict) and tuple(pointer) == POINTER_KEYS and PAGE_ID_RE.match(page_id)
          and isinstance(pointer["revision"], int) and not isinstance(pointer["revision"], bool)
          and 1 <= pointer["revision"] <= 10_001
          and all(isinstance(pointer[k], str) and _HEX64.match(pointer[k])
                  for k in ("sha256", "markdown_sha256", "view_sha256"))
          and all(isinstance(pointer[k], str) for k in ("title", "kind", "updated_at", "summary"))
          and isinstance(pointer["claims"], int))
    if ok:
        stem = f"revisions/{page_id}/{pointer['revision']}-"
        ok = all(isinstance(pointer[k], str) and pointer[k].startswith(stem)
                 and re.fullmatch(r"[0-9a-f]{12}\." + ext, pointer[k][len(stem):])
                 for k, ext in (("record_file", "json"), ("markdown_file", "md")))
    if not ok:
        raise StorageError(f"{where}: invalid pointer for Wiki page {page_id!r}")


#: ``index.json`` lines already parsed or written, both ways (most lines survive a write unchanged).
_LINES: dict[str, tuple[str, dict[str, Any]]] = {}
_POINTER_LINES: dict[int, tuple[dict[str, Any], str]] = {}  # id(pointer) -> (pointer, line)
_HEAD, _TAIL = f'{{\n  "schema_version": {SCHEMA_VERSION},\n  "pages": {{\n', "\n  }\n}\n"


def _remember_line(line: str, page_id: str, pointer: dict[str, Any]) -> None:
    if len(_LINES) > 4 * MAX_PAGES:
        _LINES.clear()
        _POINTER_LINES.clear()
    _LINES[line] = (page_id, pointer)
    _POINTER_LINES[id(pointer)] = (pointer, line)


def line_of(line: str) -> str:
    """The page id a line of ``index.json`` is about (pointers are shared by reference, never changed)."""
    return _LINES[line][0] if line in _LINES else ""


def _parse_lines(data: bytes) -> dict[str, Any] | None:
    """Parse ``index.json`` as :func:`dump_index` lays it out, reusing lines seen before; None otherwise."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not (text.startswith(_HEAD) and text.endswith(_TAIL)):
        return None
    pages: dict[str, Any] = {}
    body = text[len(_HEAD):-len(_TAIL)]
    lines = body.split(",\n") if body else []
    for line in lines:
        known = _LINES.get(line)
        if known is None:
            try:
                entry = json.loads("{" + line + "}")
            except ValueError:
                return None
            if len(entry) != 1:
                return None
            (page_id, pointer), = entry.items()
            check_pointer(page_id, pointer, INDEX)
            _remember_line(line, page_id, pointer)
            known = (page_id, pointer)
        if known[0] in pages:
            raise StorageError(f"{INDEX}: page {known[0]!r} appears twice")
        pages[known[0]] = known[1]
    ids = list(pages)
    if all(a < b for a, b in zip(ids, ids[1:])):  # as dump_index lays them out: the next dump starts here
        _DUMPED[:] = [(pages, ids, lines)]
    return {"schema_version": SCHEMA_VERSION, "pages": pages}


#: The sorted lines of the last index dumped: (its pages dict, page ids, lines).
_DUMPED: list[tuple[dict[str, Any], list[str], list[str]]] = []


def _line(page_id: str, pointer: dict[str, Any]) -> str:
    known = _POINTER_LINES.get(id(pointer))
    line = known[1] if known is not None and known[0] is pointer and line_of(known[1]) == page_id else None
    if line is None:
        line = f"    {json.dumps(page_id, ensure_ascii=False)}: {json.dumps(pointer, ensure_ascii=False)}"
        _remember_line(line, page_id, pointer)
    return line


def dump_index(index: dict[str, Any], base: dict[str, Any] | None = None, changed: str | None = None) -> str:
    """``index.json`` text: one page per line (sorted), so a diff shows which pages changed.

    ``base`` and ``changed`` (optional) say that ``index`` is the pages dict ``base`` with only page
    ``changed`` added or replaced, so the lines of ``base`` are updated instead of sorted again.
    """
    pages = index["pages"]
    last = _DUMPED[0] if _DUMPED else None
    if last is not None and base is not None and last[0] is base and changed is not None and changed in pages:
        ids, rows = list(last[1]), list(last[2])
        at = bisect.bisect_left(ids, changed)
        if at < len(ids) and ids[at] == changed:
            rows[at] = _line(changed, pages[changed])
        else:
            ids.insert(at, changed)
            rows.insert(at, _line(changed, pages[changed]))
    else:
        ids = sorted(pages)
        rows = [_line(page_id, pages[page_id]) for page_id in ids]
    _DUMPED[:] = [(pages, ids, rows)]
    if not rows:
        return f'{{\n  "schema_version": {SCHEMA_VERSION},\n  "pages": {{}}\n}}\n'
    return _HEAD + ",\n".join(rows) + _TAIL
