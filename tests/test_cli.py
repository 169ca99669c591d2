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
    assert "2/2 pages read" in proc.stdout and "[work-stealing] [scheduler]" in proc.stdout
    assert "normalised match" in proc.stdout and "refused as it should be: citations[0]: Quote is absent" in proc.stdout
    assert "ready to finish as completed" in proc.stdout and "status completed; report: " in proc.stdout
    assert "'tokio': 3 instances, 1 unique URL\n" in proc.stdout and "(s)" not in proc.stdout  # QA papercut 18
    assert proc.stdout.count("Read each source with research_source") == 1  # QA papercut 19: said once
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
    assert proc.returncode == 2 and "limit" in proc.stderr  # an out-of-range option is a usage error


def test_usage_errors_exit_2(tmp_path):
    assert run_cli("search", data_dir=tmp_path).returncode == 2
    assert run_cli("sync", "x", "--mode", "sometimes", data_dir=tmp_path).returncode == 2
    assert run_cli("frobnicate", data_dir=tmp_path).returncode == 2


def test_option_values_the_model_refuses_are_usage_errors(tmp_path, demo):
    data = tmp_path / "data"
    cli_json("sync", str(demo), "--source-id", "d", data_dir=data)
    for args, field in ((("search", "d", "x", "--limit", "-1"), "limit"),
                        (("search", "d", "x", "--offset", "-5"), "offset"),
                        (("search", "d", "--tag-color", "pink"), "tag_colors[0]"),
                        (("history", "d", "--limit", "-1"), "limit"),
                        (("search-archive", "x", "--offset", "-1"), "offset"),
                        (("literature", "x", "--from-year", "2025", "--to-year", "2020"), "to_year"),
                        (("search-plan", "x", "--from-year", "2025", "--to-year", "2020"), "to_year")):
        proc = run_cli(*args, data_dir=data)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
        assert f": {field}: " in proc.stderr and "Traceback" not in proc.stderr
    as_json = cli_json("search", "d", "--tag-color", "pink", data_dir=data, expect=2)
    assert as_json["error_kind"] == "invalid_input" and "tag_colors" in as_json["error"]


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


def test_small_ux_fixes(tmp_path, demo):
    data = tmp_path / "data"
    elsewhere = tmp_path / "elsewhere"
    # --data-dir after the subcommand, like before it
    proc = run_cli("sync", str(demo), "--source-id", "d", "--data-dir", str(data), data_dir=elsewhere)
    assert proc.returncode == 0, proc.stderr
    assert (data / "index.sqlite3").exists() and not elsewhere.exists()
    assert cli_json("status", f"--data-dir={data}", data_dir=elsewhere)["sources"][0]["source_id"] == "d"
    # singular and plural
    found = run_cli("search", "d", "示例公司甲", data_dir=data)
    assert "1 match (1 unique URL)" in found.stdout
    # context shows the item's tags
    ctx = run_cli("context", "d", "--item", "temp-one", data_dir=data)
    assert "tags: #关注 (green)" in ctx.stdout
    # search-plan is readable text unless --json
    plan = run_cli("search-plan", "graph rag", "--native-tool", "web_search", data_dir=data)
    assert plan.returncode == 0 and plan.stdout.startswith("Search plan for 'graph rag': hybrid search")
    assert "web_search" in plan.stdout and "{" not in plan.stdout
    # doctor says when the data dir does not exist yet
    doctor = run_cli("doctor", data_dir=tmp_path / "not-yet")
    assert "does not exist yet; the first sync creates it" in doctor.stdout


def test_file_names_with_newlines_are_escaped_in_text(tmp_path, demo):
    data = tmp_path / "data"
    odd = demo / "临时栏目" / "常规链式" / "two\nlines.json"
    card = json.loads((demo / TEMP_PATH).read_text(encoding="utf-8"))
    card["id"], card["label"] = "temp-section-odd", "A-9"
    for item in card["items"]:
        item["sectionId"] = "temp-section-odd"
        for child in item.get("children", []):
            child["sectionId"] = "temp-section-odd"
    odd.write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
    assert run_cli("sync", str(demo), "--source-id", "d", data_dir=data).returncode == 0
    status = run_cli("status", "d", data_dir=data)
    assert "常规链式/two\\nlines.json" in status.stdout
    assert not any(line.startswith("lines.json") for line in status.stdout.splitlines())
    odd.unlink()
    proc = run_cli("sync", str(demo), "--source-id", "d", data_dir=data)
    assert "two\\nlines.json" in proc.stdout and "kept 1 indexed file missing" in proc.stdout


def test_duplicate_warning_names_at_most_three(core, demo):
    for n in range(1, 6):
        out = core.sync(demo, source_id=f"s{n}")
    warning = next(w for w in out["warnings"] if w.startswith("Identical content"))
    assert warning.startswith("Identical content is already indexed as s1, s2, s3 and 1 more;")


def test_a_fetch_failure_lists_every_providers_reason(tmp_path, monkeypatch):
    import httpx
    import respx
    from click.testing import CliRunner

    from bookmark_research.cli.main import cli
    from bookmark_research.config.settings import update

    update({"fetch.providers": ["exa", "jina", "direct"]}, terminal=True)
    with respx.mock:
        respx.get(url__startswith="https://r.jina.ai/").mock(return_value=httpx.Response(451))
        respx.route(host="127.0.0.1").pass_through()
        result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "d"), "fetch-web", "http://127.0.0.1:9/x"])
    assert result.exit_code == 1
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("error: no page could be read: ")
    reasons = last.removeprefix("error: no page could be read: ").split("; ")
    assert reasons[0] == "exa: cannot reach the MCP endpoint" and reasons[1] == "jina HTTP 451"
    assert reasons[2].startswith("direct: the host resolves to a private") and len(reasons) == 3
