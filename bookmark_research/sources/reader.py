"""Read a package input (directory, ZIP or one section JSON) into memory, safely.

Only the entry ``.canvas`` at the package root and ``*.json`` files under protocol folders are
bookmark data. Everything else is ignored with a warning. Paths that could escape the package,
links, special files and oversized inputs are refused before anything is written.
"""

from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from bookmark_research.canvas.layout import PROTOCOL_FOLDERS
from bookmark_research.canvas.strictjson import load_object
from bookmark_research.errors import InvalidInputError, UnsafeInputError
from bookmark_research.sources.limits import Limits


@dataclass
class PackageInput:
    input_path: Path
    input_kind: str  # directory | zip | section
    files: dict[str, bytes] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    single_card: bool = False

    @property
    def canvas_path(self) -> str | None:
        return next((p for p in self.files if p.endswith(".canvas")), None)


class _Budget:
    """The package limits, one rule for folders and ZIPs: every file counts towards the entry limit;
    the size limits apply to the files that are read (the ``.canvas`` and section JSON), since
    ignored files (media, notes) are never read or decompressed."""

    def __init__(self, limits: Limits, label: str) -> None:
        self.limits, self.label, self.total, self.entries = limits, label, 0, 0

    def count_entry(self) -> None:
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise UnsafeInputError(f"{self.label}: more than {self.limits.max_entries} entries (entry limit)")

    def count_size(self, name: str, size: int) -> None:
        self.total += size
        if size > self.limits.max_file_bytes:
            raise UnsafeInputError(f"{name}: file of {size} bytes exceeds the {self.limits.max_file_bytes}-byte "
                                   "per-file limit (BOOKMARK_RESEARCH_MAX_FILE_BYTES)")
        if self.total > self.limits.max_total_bytes:
            raise UnsafeInputError(f"{self.label}: package exceeds the {self.limits.max_total_bytes}-byte size limit "
                                   "(BOOKMARK_RESEARCH_MAX_PACKAGE_BYTES)")

    def count(self, name: str, size: int) -> None:
        """A file that will be read."""
        self.count_entry()
        self.count_size(name, size)


def shown(path: str | os.PathLike[str]) -> str:
    """A path for a message: bytes that are not UTF-8 escaped (``\\xff``), control characters escaped."""
    text = os.fsencode(path).decode("utf-8", errors="backslashreplace")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _unreadable(path: str | os.PathLike[str], exc: OSError) -> InvalidInputError:
    """A folder or file that exists but cannot be read: the sync fails (it is never treated as missing)."""
    reason = exc.strerror or type(exc).__name__
    return InvalidInputError(f"{shown(path)}: cannot read ({reason}); fix its permissions and sync again, "
                             "nothing was changed")


def _check_name(rel: str) -> None:
    """Package file names must be UTF-8 (they are stored, searched and shown)."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"{shown(rel)}: file name is not valid UTF-8; rename it and sync again") from None


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _unreadable(path, exc) from None


def _is_section_json(data: bytes, name: str) -> bool:
    try:
        return load_object(data, name).get("format") == "bookmark-canvas-section"
    except InvalidInputError:
        return False


def _ignored_warning(ignored: list[str]) -> list[str]:
    if not ignored:
        return []
    names = ", ".join(shown(n) for n in sorted(ignored)[:5]) + (f" and {len(ignored) - 5} more" if len(ignored) > 5 else "")
    return [f"Ignored {len(ignored)} non-bookmark file{'s' if len(ignored) != 1 else ''}: {names}"]


def read_input(path: str | os.PathLike[str], limits: Limits | None = None) -> PackageInput:
    """Read ``path`` into a :class:`PackageInput`, or raise a one-line error."""
    limits = limits or Limits.from_env()
    p = Path(path).expanduser()
    try:
        p.stat()
    except PermissionError as exc:
        raise _unreadable(p, exc) from None
    except OSError:
        pass  # missing: reported below
    if p.is_dir():
        return read_directory(p.resolve(), limits)
    if p.is_file():
        suffix = p.suffix.lower()
        if suffix == ".zip":
            return read_zip(p.resolve(), limits)
        if suffix == ".json":
            return read_card(p.resolve(), limits)
        if suffix == ".canvas":
            raise InvalidInputError(f"{p}: pass the package folder or ZIP that contains this .canvas, not the file alone")
    if not p.exists():
        raise InvalidInputError(f"{p}: no such file or directory")
    raise InvalidInputError(f"{p}: input must be a package directory, a .zip export or a section .json")


def read_card(path: Path, limits: Limits) -> PackageInput:
    _check_name(path.name)
    size = path.stat().st_size
    _Budget(limits, str(path)).count(path.name, size)
    data = _read(path)
    load_object(data, path.name)
    if not _is_section_json(data, path.name):
        raise InvalidInputError(f"{path.name}: not a Bookmark Canvas section (format must be 'bookmark-canvas-section')")
    return PackageInput(path, "section", {path.name: data}, single_card=True)


def read_directory(root: Path, limits: Limits) -> PackageInput:
    out = PackageInput(root, "directory")
    budget = _Budget(limits, str(root))
    ignored: list[str] = []
    canvases: list[str] = []
    try:
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise _unreadable(root, exc) from None
    for entry in entries:
        try:
            _read_root_entry(root, entry, out, budget, ignored, canvases, limits)
        except OSError as exc:
            raise _unreadable(entry.path, exc) from None
    if len(canvases) > 1:
        raise InvalidInputError(
            f"{root}: a package has at most one .canvas entry at its root, found {', '.join(shown(c) for c in canvases)}; "
            "use separate sources for separate canvases"
        )
    if not out.files:
        hint = _nested_package_hint(root)
        raise InvalidInputError(f"{root}: no Bookmark Canvas files found (no root .canvas, Permanent/ or Temporary/){hint}")
    out.warnings.extend(_ignored_warning(ignored))
    return out


def _read_root_entry(root: Path, entry: os.DirEntry[str], out: PackageInput, budget: _Budget, ignored: list[str],
                     canvases: list[str], limits: Limits) -> None:
    name = entry.name
    if name.startswith("."):
        return
    if entry.is_symlink():
        if name in PROTOCOL_FOLDERS or name.endswith((".canvas", ".json")):
            _refuse_link(root, Path(entry.path), name)
        ignored.append(name)
        return
    if entry.is_dir(follow_symlinks=False):
        if name in PROTOCOL_FOLDERS:
            _read_protocol_dir(root, Path(entry.path), out, budget, ignored)
        else:
            ignored.append(name + "/")
        return
    if not entry.is_file(follow_symlinks=False):
        ignored.append(name)
        return
    if name.endswith(".canvas"):
        _check_name(name)
        canvases.append(name)
        budget.count(name, entry.stat(follow_symlinks=False).st_size)
        out.files[name] = _read(Path(entry.path))
    elif name.lower().endswith(".json"):
        size = entry.stat(follow_symlinks=False).st_size
        budget.count_entry()
        if size <= limits.max_file_bytes and _is_section_json(_read(Path(entry.path)), shown(name)):
            raise InvalidInputError(
                f"{shown(name)}: loose section file at the package root; put it under Permanent/ or Temporary/, "
                "or sync the card file on its own"
            )
        ignored.append(name)
    else:
        budget.count_entry()
        ignored.append(name)


def _nested_package_hint(root: Path) -> str:
    try:
        for child in sorted(root.iterdir()):
            if child.is_dir() and not child.is_symlink() and any(
                (child / name).is_dir() for name in PROTOCOL_FOLDERS
            ):
                return f"; did you mean {child}?"
    except OSError:
        pass
    return ""


def _refuse_link(root: Path, link: Path, rel: str) -> None:
    target = link.resolve()
    if not target.is_relative_to(root):
        raise UnsafeInputError(f"{rel}: external symlink pointing outside the package is refused")
    raise UnsafeInputError(f"{rel}: symlinks inside packages are not followed; replace it with the file itself")


def _raise(exc: OSError) -> None:
    raise _unreadable(exc.filename or "?", exc)


def _read_protocol_dir(root: Path, folder: Path, out: PackageInput, budget: _Budget, ignored: list[str]) -> None:
    """Every ``*.json`` under a protocol folder. A folder or file that cannot be read fails the sync:
    treating it as missing would make a complete mirror delete its sections."""
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False, onerror=_raise):
        current = Path(dirpath)
        for d in list(dirnames):
            rel = (current / d).relative_to(root).as_posix()
            if d.startswith("."):
                dirnames.remove(d)
            elif (current / d).is_symlink():
                _refuse_link(root, current / d, rel + "/")
        dirnames.sort()
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            full = current / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                if name.lower().endswith(".json"):
                    _refuse_link(root, full, rel)
                ignored.append(rel)
                continue
            try:
                st = full.stat()
            except OSError as exc:
                raise _unreadable(full, exc) from None
            budget.count_entry()
            if not stat.S_ISREG(st.st_mode) or not name.lower().endswith(".json"):
                ignored.append(rel)  # media and other files are not read, so only the entry count applies
                continue
            _check_name(rel)
            budget.count_size(rel, st.st_size)
            out.files[rel] = _read(full)


# --- ZIP -------------------------------------------------------------------------------------


def _check_entry_name(name: str) -> list[str]:
    if not name or "\x00" in name or "\\" in name or name.startswith("/"):
        raise UnsafeInputError(f"ZIP entry {name!r}: unsafe archive path")
    segments = name.rstrip("/").split("/")
    for seg in segments:
        if seg in ("", ".", "..") or ":" in seg:
            raise UnsafeInputError(f"ZIP entry {name!r}: unsafe archive path")
    return segments


def read_zip(path: Path, limits: Limits) -> PackageInput:
    label = path.name
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InvalidInputError(f"{label}: cannot read ZIP export: {exc}") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > limits.max_entries:
            raise UnsafeInputError(f"{label}: more than {limits.max_entries} entries (entry limit)")
        budget = _Budget(limits, label)
        entries: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            segments = _check_entry_name(info.filename)
            mode = info.external_attr >> 16
            if mode and stat.S_ISLNK(mode):
                raise UnsafeInputError(f"ZIP entry {info.filename!r}: archive links are refused")
            if info.is_dir():
                continue
            if mode and stat.S_IFMT(mode) not in (0, stat.S_IFREG):
                raise UnsafeInputError(f"ZIP entry {info.filename!r}: special files are refused")
            if segments[0] == "__MACOSX" or segments[-1].startswith("."):
                continue
            if info.flag_bits & 0x1:
                raise UnsafeInputError(f"ZIP entry {info.filename!r}: encrypted archives are not supported")
            key = "/".join(segments)
            if key in entries:
                raise UnsafeInputError(f"ZIP entry {info.filename!r}: duplicate archive entry")
            budget.count_entry()
            entries[key] = info

        roots: set[tuple[str, ...]] = set()
        for key in entries:
            segs = key.split("/")
            if segs[-1].endswith(".canvas"):
                roots.add(tuple(segs[:-1]))
            elif segs[-1].lower().endswith(".json"):
                cut = next((i for i, s in enumerate(segs[:-1]) if s in PROTOCOL_FOLDERS), None)
                if cut is not None:
                    roots.add(tuple(segs[:cut]))
        if len(roots) > 1:
            shown = ", ".join(sorted("/".join(r) + "/" if r else "(archive root)" for r in roots))
            raise InvalidInputError(f"{label}: archive contains multiple package roots ({shown}); import each separately")

        def read(info: zipfile.ZipInfo) -> bytes:
            budget.count_size(f"ZIP entry {info.filename!r}", info.file_size)
            try:
                with zf.open(info) as fh:
                    data = fh.read(limits.max_file_bytes + 1)
            except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as exc:
                raise InvalidInputError(f"ZIP entry {info.filename!r}: cannot read: {exc}") from None
            if len(data) > limits.max_file_bytes:
                raise UnsafeInputError(f"ZIP entry {info.filename!r}: exceeds the {limits.max_file_bytes}-byte "
                                       "per-file limit (BOOKMARK_RESEARCH_MAX_FILE_BYTES)")
            return data

        out = PackageInput(path, "zip")
        ignored: list[str] = []
        loose: list[str] = []
        root = next(iter(roots)) if roots else None
        for key, info in sorted(entries.items()):
            segs = key.split("/")
            if root is None or tuple(segs[: len(root)]) != root:
                if segs[-1].lower().endswith(".json"):
                    loose.append(key)
                else:
                    ignored.append(key)
                continue
            rel = segs[len(root):]
            rel_path = "/".join(rel)
            if len(rel) == 1 and rel[0].endswith(".canvas"):
                out.files[rel_path] = read(info)
            elif len(rel) > 1 and rel[0] in PROTOCOL_FOLDERS and rel[-1].lower().endswith(".json"):
                out.files[rel_path] = read(info)
            elif len(rel) == 1 and rel[0].lower().endswith(".json"):
                loose.append(key)
            else:
                ignored.append(key)

        canvases = [p for p in out.files if p.endswith(".canvas")]
        if len(canvases) > 1:
            raise InvalidInputError(f"{label}: a package has at most one .canvas entry at its root, found {', '.join(canvases)}")
        if root is None:
            if len(loose) == 1:
                data = read(entries[loose[0]])
                name = loose[0].rsplit("/", 1)[-1]
                if _is_section_json(data, name):
                    load_object(data, loose[0])
                    return PackageInput(path, "zip", {name: data}, single_card=True)
            raise InvalidInputError(f"{label}: no Bookmark Canvas package found in the archive")
        for key in loose:
            if _is_section_json(read(entries[key]), key):
                raise InvalidInputError(
                    f"ZIP entry {key!r}: loose section card outside the package folders; import the inputs separately"
                )
            ignored.append(key)
        out.warnings.extend(_ignored_warning(ignored))
        return out
