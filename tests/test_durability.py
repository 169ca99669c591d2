"""Durable snapshots and archive captures, self-repair of damaged versions, leftovers from crashes."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from bookmark_research.config.settings import update
from bookmark_research.evidence.archive import PageCapture, save
from bookmark_research.sources.snapshots import source_key
from tests.packages import A_PATH, TEMP_PATH, read_json, write_json


@pytest.fixture
def fsynced(monkeypatch):
    """Paths passed to os.fsync (resolved through /proc/self/fd)."""
    seen: list[str] = []
    real = os.fsync

    def record(fd):
        try:
            seen.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
        return real(fd)

    monkeypatch.setattr(os, "fsync", record)
    return seen


def _staged(fsynced: list[str]) -> set[str]:
    """Paths fsynced inside a staging folder, relative to it ("" for the folder itself)."""
    out = set()
    for path in fsynced:
        if "/.staging-" in path:
            rest = path.split("/.staging-", 1)[1]
            out.add(rest.split("/", 1)[1] if "/" in rest else "")
    return out


def test_every_published_file_and_folder_is_fsynced(core, demo, fsynced, tmp_path, monkeypatch):
    out = core.sync(demo, source_id="d")
    version = Path(out["snapshot_path"]).parent
    files = {p.relative_to(version).as_posix() for p in version.rglob("*") if p.is_file()}
    assert len(files) == 5  # four package files and the manifest
    # every byte and folder is flushed before the rename, and the rename itself after it
    assert files | {"", "package"} <= _staged(fsynced)
    assert str(version.parent) in fsynced
    fsynced.clear()
    saved = save(core.app, provider="direct", tool="fetch", request={}, response={"a": 1}, retrieved_at="t",
                 pages=[PageCapture("https://e.com/", text="durable page text " * 20)])
    capture = Path(saved["directory"])
    assert {"manifest.json", "response.json", ""} <= _staged(fsynced)
    assert str(capture.parent) in fsynced
    body = Path(saved["pages"][0]["body_path"])
    assert any(p.startswith(f"{body.parent}/.{body.name}.") for p in fsynced) and str(body.parent) in fsynced
    fsynced.clear()
    update({"fetch.max_characters": 5000}, terminal=True)
    config = Path(os.environ["BOOKMARK_RESEARCH_CONFIG"])
    assert any(p.startswith(f"{config.parent}/.{config.name}.") for p in fsynced) and str(config.parent) in fsynced


def _torn(path: Path) -> None:
    """What a power loss before the data reached the disk leaves: the name, but not the bytes."""
    path.chmod(0o644)
    path.write_bytes(b"")


def test_damaged_unreferenced_version_is_rebuilt_not_fatal(core, demo):
    core.sync(demo, source_id="d")
    core.reopen()
    index = core.data_dir / "index.sqlite3"
    core.app.close()
    backup = {p.name: p.read_bytes() for p in core.data_dir.glob("index.sqlite3*")}
    data = read_json(demo / A_PATH)
    data["identityMap"][0]["note"] = "second version"
    write_json(demo / A_PATH, data)
    second = core.sync(demo, source_id="d")
    core.app.close()
    for p in core.data_dir.glob("index.sqlite3*"):  # the power went before the index committed
        p.unlink()
    for name, content in backup.items():
        (core.data_dir / name).write_bytes(content)
    version = Path(second["snapshot_path"]).parent
    _torn(version / "package" / A_PATH)
    now = time.time()
    os.utime(version, (now + 3600, now + 3600))  # "new": the sweep leaves it, publication must cope
    core.reopen()
    assert index.exists()
    again = core.sync(demo, source_id="d")
    assert again["version_id"] == second["version_id"]
    assert (version / "package" / A_PATH).read_bytes() == (demo / A_PATH).read_bytes()
    assert core.total("d", "second version") == 1


def test_damaged_current_version_is_repaired_by_the_next_sync(core, demo):
    out = core.sync(demo, source_id="d")
    package = Path(out["snapshot_path"])
    _torn(package / TEMP_PATH)
    (package.parent / "manifest.json").chmod(0o644)
    (package.parent / "manifest.json").write_text("{", encoding="utf-8")
    again = core.sync(demo, source_id="d")
    assert again["version_id"] == out["version_id"] and again["changed_files"] == 0
    assert (package / TEMP_PATH).read_bytes() == (demo / TEMP_PATH).read_bytes()
    assert core("source_history", source_id="d")["versions"][0]["snapshot_exists"] is True


def test_next_sync_removes_leftovers_of_interrupted_ones(core, demo, tmp_path):
    first = core.sync(demo, source_id="d")
    root = core.data_dir / "snapshots"
    key = source_key("d")
    old = time.time() - 60
    leftovers = [root / ".staging-dead1", root / ".removed-dead2", root / key / "v-orphaned", root / ("f" * 24),
                 root / key / ".staging-x"]
    for path in leftovers:
        (path / "package").mkdir(parents=True)
        (path / "package" / "x.json").write_text("{}")
        os.utime(path, (old, old))
    busy = root / ".staging-in-progress"  # another writer's, newer than this sync: kept
    busy.mkdir()
    os.utime(busy, (time.time() + 3600, time.time() + 3600))
    data = read_json(demo / A_PATH)
    data["identityMap"][0]["note"] = "changed"
    write_json(demo / A_PATH, data)
    second = core.sync(demo, source_id="d")
    assert [p for p in leftovers if p.exists()] == []
    assert busy.exists()
    versions = sorted(p.name for p in (root / key).iterdir())
    assert versions == sorted([first["version_id"], second["version_id"]])


class _CrashAtCommit(BaseException):
    pass


class _Conn:
    """The index connection, with the instant of COMMIT observed (what a kill -9 there would leave)."""

    def __init__(self, conn, at_commit):
        self._conn, self._at_commit = conn, at_commit

    def execute(self, sql, *args):
        if sql == "COMMIT":
            self._at_commit()
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def test_source_remove_keeps_rows_and_snapshots_consistent_at_every_instant(core, demo):
    out = core.sync(demo, source_id="x")
    snapshot = Path(out["snapshot_path"])
    seen = []
    core.app._conn = _Conn(core.app.connect(), lambda: seen.append(snapshot.is_dir()))
    core("source_remove", source_id="x", confirm=True)
    # At COMMIT the rows still exist until the commit is durable: their snapshot must still be there.
    assert seen == [True]
    assert not core.app.snapshots.source_dir("x").exists()


def test_a_crash_after_remove_commits_is_cleaned_by_the_next_sync(core, demo, tmp_path, monkeypatch):
    core.sync(demo, source_id="x")
    from bookmark_research.sources import snapshots

    monkeypatch.setattr(snapshots.SnapshotStore, "retire", lambda self, sid: (_ for _ in ()).throw(OSError(5, "EIO")))
    core("source_remove", source_id="x", confirm=True)
    monkeypatch.undo()
    leftover = core.app.snapshots.source_dir("x")
    assert leftover.exists() and core("index_status")["sources"] == []
    old = time.time() - 60
    for path in [leftover, *leftover.iterdir()]:
        os.utime(path, (old, old))
    other = tmp_path / "other"
    shutil.copytree(demo, other)
    core.sync(other, source_id="y")
    assert not leftover.exists()
