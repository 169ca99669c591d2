"""The CLI as a user runs it: a subprocess, real files, exit codes, JSON and human output."""

from __future__ import annotations

import json

from tests.conftest import cli_json, run_cli
from tests.packages import FIXTURES, TEMP_PATH


def test_demo_runs_offline_and_leaves_nothing(tmp_path):
    proc = run_cli("demo", env={"HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "18 bookmarks (15 unique URLs)" in proc.stdout
    assert "Asynchronous Programming in Rust" in proc.stdout
    assert "◀─▶" in proc.stdout and "Traceback" not in proc.stderr
    assert "2/2 page(s) read" in proc.stdout and "[work-stealing] [scheduler]" in proc.stdout
    assert "normalised match" in proc.stdout and "refused as it should be: Quote is absent" in proc.stdout
    assert "ready to finish as completed" in proc.stdout and "status completed; report: " in proc.stdout
    assert not (tmp_path / ".local").exists() and not (tmp_path / ".config").exists()


def test_sync_search_context_status_json(tmp_path, demo):
    data = tmp_path / "data"
    out = cli_json("sync", str(demo), "--source-id", "d", data_dir=data)
    assert out["counts"]["bookmarks"] == 5 and out["mode"] == "snapshot"
    found = cli_json("search", "d", "--target", "示例公司甲", "--target", "%_", "--limit", "1", data_dir=data)
    assert found["total"] == 2 and [t["total"] for t in found["targets"]] == [1, 1]
    assert cli_json("search", "d", "--section", "B", "--count-only", data_dir=data)["total"] == 3
    assert cli_json("search", "d", "--tag", "关注", "--tag-color", "green", data_dir=data)["total"] == 1
    folders = cli_json("search", "d", "--item-type", "folder", "--order", "tree", data_dir=data)
    assert [r["item_id"] for r in folders["results"]] == ["root", "companies", "temp-folder"]
    ctx = cli_json("context", "d", "--item", "bookmark-alpha", data_dir=data)
    assert [a["item_id"] for a in ctx["items"][0]["ancestors"]] == ["root", "companies"]
    status = cli_json("status", data_dir=data)
    assert status["sources"][0]["counts"]["unique_urls"] == 4
    history = cli_json("history", "d", data_dir=data)
    assert history["total"] == 1 and history["versions"][0]["current"] is True


def test_human_output(tmp_path, demo):
    data = tmp_path / "data"
    proc = run_cli("sync", str(demo), "--source-id", "d", data_dir=data)
    assert proc.returncode == 0 and "Created source d" in proc.stdout
    proc = run_cli("search", "d", "示例", data_dir=data)
    assert proc.returncode == 0 and "示例公司甲" in proc.stdout and "1 match" in proc.stdout
    proc = run_cli("status", data_dir=data)
    assert "SOURCE" in proc.stdout and "5 bookmarks (4 unique URLs)" in proc.stdout
    proc = run_cli("context", "d", "--group", "研究组", data_dir=data)
    assert "研究组" in proc.stdout and "───" in proc.stdout
    proc = run_cli("source", "remove", "d", data_dir=data)
    assert "--confirm" in proc.stdout
    proc = run_cli("source", "remove", "d", "--confirm", data_dir=data)
    assert proc.returncode == 0 and "Removed d" in proc.stdout
    assert "No sources yet" in run_cli("status", data_dir=data).stdout


def test_errors_are_one_line_exit_1(tmp_path, demo):
    data = tmp_path / "data"
    (demo / TEMP_PATH).write_text('{\n "format": ,\n}', encoding="utf-8")
    proc = run_cli("sync", str(demo), data_dir=data)
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and "line 2" in proc.stderr and "A-1 示例.json" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert cli_json("status", data_dir=data)["sources"] == []
    err = cli_json("search", "nope", data_dir=data, expect=1)
    assert err["error_kind"] == "not_found" and "nope" in err["error"]
    proc = run_cli("search", "nope", "--limit", "5000", data_dir=data)
    assert proc.returncode == 1 and "limit" in proc.stderr


def test_usage_errors_exit_2(tmp_path):
    assert run_cli("search", data_dir=tmp_path).returncode == 2
    assert run_cli("sync", "x", "--mode", "sometimes", data_dir=tmp_path).returncode == 2
    assert run_cli("frobnicate", data_dir=tmp_path).returncode == 2


def test_queries_do_not_create_a_database(tmp_path):
    data = tmp_path / "data"
    assert run_cli("search", "x", data_dir=data).returncode == 1
    assert run_cli("status", data_dir=data).returncode == 0
    assert not data.exists()


def test_doctor_reports_storage(tmp_path):
    ok = cli_json("doctor", data_dir=tmp_path / "data")
    assert ok["ready"] is True and ok["fts5"] is True and ok["next_step"] is None
    assert not (tmp_path / "data").exists() and list(tmp_path.iterdir()) == []
    blocker = tmp_path / "file"
    blocker.write_text("x")
    bad = cli_json("doctor", data_dir=blocker / "data")
    assert bad["ready"] is False and "BOOKMARK_RESEARCH_DATA_DIR" in bad["next_step"]


def test_global_data_dir_option_and_module_entry(tmp_path):
    proc = run_cli("--data-dir", str(tmp_path / "x"), "sync", str(FIXTURES / "sample-zh"), "--mode", "snapshot", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["counts"]["bookmarks"] == 10
    assert (tmp_path / "x" / "index.sqlite3").exists()
    assert "Usage" in run_cli("--help").stdout
