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
