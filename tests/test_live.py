"""Live sources: freshness states, debounce and deletion grace, Git locks, query-time refresh, events."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bookmark_research.errors import BookmarkResearchError
from bookmark_research.sources.live import Timing, refresh
from bookmark_research.sources.watcher import SourceWatcher
from tests.conftest import Core, run_cli
from tests.packages import TEMP_PATH, drop_temp_card, make_demo, read_json, write_json

FAST = Timing(debounce=0.2, deletion_grace=0.6)


@pytest.fixture
def live(core: Core, tmp_path: Path) -> tuple[Core, Path]:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    pkg = make_demo(tmp_path / "repo" / "export")
    out = core.sync(pkg, source_id="L")
    assert out["mode"] == "live" and out["state"] == "current"
    return core, pkg


def _edit_note(pkg: Path, text: str) -> None:
    data = read_json(pkg / TEMP_PATH)
    data["items"][0]["children"][0]["note"] = text
    write_json(pkg / TEMP_PATH, data)


def _wait(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_debounce_then_current(live):
    core, pkg = live
    t0 = time.time()
    assert refresh(core.app, "L", timing=FAST, now=t0)["state"] == "current"
    _edit_note(pkg, "debounced-note")
    first = refresh(core.app, "L", timing=FAST, now=t0)
    assert first["state"] == "pending" and first["pending_files"] == [TEMP_PATH]
    assert core.total("L", "debounced-note", refresh=False) == 0
    done = refresh(core.app, "L", timing=FAST, now=t0 + 0.3)
    assert done["state"] == "current" and done["performed"] and done["sync"]["items_updated"] == 1
    assert core.total("L", "debounced-note", refresh=False) == 1


def test_touch_without_change_is_not_a_change(live):
    core, pkg = live
    os.utime(pkg / TEMP_PATH)
    result = refresh(core.app, "L", timing=FAST)
    assert result["state"] == "current" and not result["performed"]


def test_query_refreshes_first(live):
    core, pkg = live
    _edit_note(pkg, "query-time-note")
    out = core.search("L", "query-time-note")
    assert out["total"] == 1
    assert out["refresh"]["performed"] and out["refresh"]["index_updated"] and out["refresh"]["mode"] == "checked_package"


def test_deletion_waits_for_its_grace(live):
    core, pkg = live
    core.sync(pkg, source_id="L", completeness="complete")
    drop_temp_card(pkg)
    t0 = time.time()
    first = refresh(core.app, "L", timing=Timing(2.0, 5.0), now=t0, force=True)
    assert first["state"] == "pending" and TEMP_PATH in first["pending_files"]
    assert refresh(core.app, "L", timing=Timing(2.0, 5.0), now=t0 + 4.9, force=True)["state"] == "pending"
    assert core.status("L")["bookmarks"] == 5
    assert refresh(core.app, "L", timing=Timing(2.0, 5.0), now=t0 + 5.1)["state"] == "current"
    assert core.status("L")["bookmarks"] == 3


def test_transient_disappearance_keeps_data(live, tmp_path):
    core, pkg = live
    away = tmp_path / "away"
    pkg.rename(away)
    assert refresh(core.app, "L", timing=FAST)["state"] == "unavailable"
    with pytest.raises(BookmarkResearchError, match="refresh=false"):
        core.search("L")
    stale = core.search("L", refresh=False)
    assert stale["total"] == 5 and stale["refresh"]["mode"] == "saved_snapshot"
    pkg.mkdir()
    assert refresh(core.app, "L", timing=FAST, force=True)["state"] == "unavailable"  # emptied, never cleared
    pkg.rmdir()
    away.rename(pkg)
    (pkg / TEMP_PATH).write_text("{broken", encoding="utf-8")
    result = refresh(core.app, "L", timing=FAST, force=True)
    assert result["state"] == "error" and "invalid JSON" in result["error"]
    assert core.status("L")["bookmarks"] == 5 and core.status("L")["source"]["state"] == "error"
    with pytest.raises(BookmarkResearchError, match="--no-refresh"):
        core.context("L")


def test_git_lock_keeps_pending(live):
    core, pkg = live
    lock = pkg.parent / ".git" / "index.lock"
    lock.write_text("")
    _edit_note(pkg, "after-checkout")
    out = core.search("L", "after-checkout")
    assert out["total"] == 0 and out["refresh"]["state"] == "pending" and "Git" in out["refresh"]["note"]
    lock.unlink()
    result = refresh(core.app, "L", timing=FAST, force=True)
    assert result["state"] == "current" and result["sync"]["items_updated"] == 1


def test_watcher_follows_edits_without_queries(live):
    core, pkg = live
    events: list[dict] = []
    with SourceWatcher(core.data_dir, FAST, on_change=events.append):
        time.sleep(0.3)
        _edit_note(pkg, "seen-by-events")
        assert _wait(lambda: any(e["performed"] and e["state"] == "current" for e in events))
        assert core.total("L", "seen-by-events", refresh=False) == 1
        assert any(e["state"] == "pending" for e in events)
        assert core.status()["watcher"]["running"] is True
    assert core.status()["watcher"]["running"] is False


def test_watcher_delete_and_restore_within_grace_loses_nothing(live, tmp_path):
    core, pkg = live
    core.sync(pkg, source_id="L", completeness="complete")
    events: list[dict] = []
    backup = tmp_path / "card.json"
    shutil.copy(pkg / TEMP_PATH, backup)
    with SourceWatcher(core.data_dir, Timing(0.1, 1.5), on_change=events.append):
        time.sleep(0.3)
        (pkg / TEMP_PATH).unlink()
        assert _wait(lambda: any(e["state"] == "pending" for e in events), 5)
        shutil.copy(backup, pkg / TEMP_PATH)
        time.sleep(2.0)
    assert core.status("L")["bookmarks"] == 5
    assert not any(e["performed"] and e["items_deleted"] for e in events)


def test_watch_command_prints_json_lines_and_stops(live):
    core, pkg = live
    proc = subprocess.Popen([sys.executable, "-m", "bookmark_research", "watch", "--json", "--debounce", "0.2",
                             "--deletion-grace", "0.5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "BOOKMARK_RESEARCH_DATA_DIR": str(core.data_dir)})
    try:
        first = json.loads(proc.stdout.readline())
        assert first["event"] == "watching" and first["sources"] == ["L"]
        time.sleep(0.5)
        _edit_note(pkg, "cli-watch-note")
        lines = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            lines.append(json.loads(proc.stdout.readline()))
            if lines[-1].get("performed"):
                break
        assert lines[-1]["state"] == "current" and lines[-1]["items_updated"] == 1
        # a second process writes while the watcher runs: no "database is locked"
        sync = run_cli("sync", str(pkg), "--source-id", "L", "--json", data_dir=core.data_dir)
        assert sync.returncode == 0, sync.stderr
        found = run_cli("search", "L", "cli-watch-note", "--no-refresh", "--json", data_dir=core.data_dir)
        assert json.loads(found.stdout)["total"] == 1
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert '"stopped"' in out and "Traceback" not in err


def test_explicit_sync_waits_for_git(live):
    core, pkg = live
    lock = pkg.parent / ".git" / "index.lock"
    lock.write_text("")
    with pytest.raises(BookmarkResearchError, match="Git is updating"):
        core.sync(pkg, source_id="L")
    lock.unlink()
    assert core.sync(pkg, source_id="L")["changed_files"] == 0


def test_a_save_during_the_sync_is_not_missed(live, monkeypatch):
    """The edit lands after the sync read the file but before it recorded what it saw."""
    core, pkg = live
    from bookmark_research.sources import manager

    real = manager.read_input

    def read_then_save(path, limits=None):
        out = real(path, limits)
        time.sleep(0.01)  # a later mtime than anything read
        _edit_note(pkg, "saved-mid-sync")
        return out

    _edit_note(pkg, "first-edit")
    monkeypatch.setattr(manager, "read_input", read_then_save)
    core.sync(pkg, source_id="L")
    monkeypatch.undo()
    assert core.total("L", "first-edit", refresh=False) == 1
    result = refresh(core.app, "L", timing=FAST, force=True)
    assert result["performed"] and result["state"] == "current"
    assert core.total("L", "saved-mid-sync", refresh=False) == 1


def test_a_live_folder_with_a_non_utf8_file_name_is_an_error_state(live):
    core, pkg = live
    bad = os.fsencode(pkg / "临时栏目" / "常规链式") + b"/caf\xe9.json"
    with open(bad, "wb") as fh:
        fh.write((pkg / TEMP_PATH).read_bytes())
    result = refresh(core.app, "L", timing=FAST, force=True)
    assert result["state"] == "error" and "caf\\xe9.json: file name is not valid UTF-8" in result["error"]
    assert core.status("L")["bookmarks"] == 5 and core.status("L")["source"]["state"] == "error"
    os.remove(bad)
    assert refresh(core.app, "L", timing=FAST, force=True)["state"] == "current"
