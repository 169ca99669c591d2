"""Where bookmark-research keeps its data."""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "bookmark-research"
DB_NAME = "index.sqlite3"


def default_data_dir() -> Path:
    """``$BOOKMARK_RESEARCH_DATA_DIR``, else ``${XDG_DATA_HOME:-~/.local/share}/bookmark-research``."""
    explicit = os.environ.get("BOOKMARK_RESEARCH_DATA_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / APP_NAME


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path:
    return Path(data_dir).expanduser().absolute() if data_dir else default_data_dir().absolute()


def enclosing_package(path: Path) -> Path | None:
    """The nearest ancestor of ``path`` (or ``path`` itself) that is a Bookmark Canvas package, if any.

    A package is a folder holding a protocol folder (``Permanent/``, ``永久栏目/``, ...) or a ``*.canvas``.
    """
    from bookmark_research.canvas.layout import PROTOCOL_FOLDERS

    for folder in (path, *path.parents):
        try:
            if any((folder / name).is_dir() for name in PROTOCOL_FOLDERS) or any(folder.glob("*.canvas")):
                return folder
        except OSError:
            continue
    return None


def checked_store_dir(path: str | os.PathLike[str], what: str) -> Path:
    """A folder we write records into (research sessions, the wiki), checked before first use.

    It must be absolute (``~`` expanded) and lie outside every canvas package; symlinked components
    are resolved away so later checks compare real locations. Raises a one-line :class:`StorageError`.
    """
    from bookmark_research.errors import StorageError

    raw = Path(path).expanduser()
    if not raw.is_absolute():
        raise StorageError(f"{what} {path}: must be an absolute path")
    resolved = raw.resolve()
    package = enclosing_package(resolved)
    if package is not None:
        raise StorageError(f"{what} {resolved}: must be outside canvas package directories (found a package at "
                           f"{package})")
    return resolved
