"""Per-process state shared by operations: data directory, database connection, snapshot store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from typing import TYPE_CHECKING

from bookmark_research.paths import DB_NAME, resolve_data_dir
from bookmark_research.sources.limits import Limits

if TYPE_CHECKING:
    from bookmark_research.sources.snapshots import SnapshotStore


class App:
    def __init__(self, data_dir: str | Path | None = None, limits: Limits | None = None) -> None:
        self.data_dir = resolve_data_dir(data_dir)
        self.db_path = self.data_dir / DB_NAME
        self._snapshots: SnapshotStore | None = None
        self._limits = limits
        self._conn: sqlite3.Connection | None = None

    @property
    def snapshots(self) -> SnapshotStore:
        """The snapshot store (imported on first use: a query never needs it)."""
        if self._snapshots is None:
            from bookmark_research.sources.snapshots import SnapshotStore

            self._snapshots = SnapshotStore(self.data_dir / "snapshots")
        return self._snapshots

    @property
    def limits(self) -> Limits:
        if self._limits is None:
            self._limits = Limits.from_env()
        return self._limits

    def connect(self, create: bool = True) -> sqlite3.Connection | None:
        """The index connection; ``None`` if it does not exist and ``create`` is false."""
        if self._conn is None:
            from bookmark_research.index.db import connect

            self._conn = connect(self.db_path, create=create)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> App:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
