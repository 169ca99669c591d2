"""The wiki from the command line (a subprocess) and over MCP (the SDK client)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bookmark_research.mcp.server import build_server
from bookmark_research.config import settings
from tests.conftest import mcp_call, mcp_payload, run_cli
from tests.wiki_support import QUOTE, QUOTE2, Lab, lab, tree  # noqa: F401


def wiki_cli(lab: Lab, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli("wiki", *args, data_dir=lab.core.data_dir, input=input)


def wiki_json(lab: Lab, *args: str, expect: int = 0) -> dict[str, Any]:
    proc = wiki_cli(lab, *args, "--json")
    assert proc.returncode == expect, proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def test_cli_write_get_list_search_lint_open(lab: Lab, tmp_path: Path) -> None:
    page_file = tmp_path / "page.json"
    page_file.write_text(json.dumps({"page": lab.page(), "change_note": "Create"}))
    out = wiki_json(lab, "write", "sessions", "--file", str(page_file))
    assert out["revision"] == 1 and out["status"] == "written"
    human = wiki_cli(lab, "write", "sessions", "--file", "-", "--expected-revision", "1", "--change-note", "Again",
                     input=json.dumps(lab.page(title="Resumable sessions")))
    assert human.returncode == 0 and "Wrote sessions revision 2" in human.stdout
    got = wiki_json(lab, "get", "sessions", "--revision", "1")
    assert got["page"]["title"] == "Reusable sessions" and got["validation"]["status"] == "current"
    shown = wiki_cli(lab, "get", "sessions")
    assert "Resumable sessions" in shown.stdout and "current" in shown.stdout
    listed = wiki_cli(lab, "list")
    assert "sessions" in listed.stdout and "1 of 1 pages" in listed.stdout
    found = wiki_json(lab, "search", "可恢复")
    assert found["total"] == 1 and "[可恢复]" in found["results"][0]["snippet"]
    assert "[可恢复]" in wiki_cli(lab, "search", "可恢复").stdout
    opened = wiki_cli(lab, "open", "sessions")
    assert opened.returncode == 0 and opened.stdout.strip() == str(lab.wiki / "pages" / "sessions.md")
    assert Path(opened.stdout.strip()).read_text().startswith("# Resumable sessions")
    lint = wiki_cli(lab, "lint")
    assert lint.returncode == 0 and "0 errors" in lint.stdout


def test_cli_lint_exits_1_with_a_table_on_errors(lab: Lab) -> None:
    lab.write("sessions")
    lab.retract(lab.rid, lab.cid)
    proc = wiki_cli(lab, "lint")
    assert proc.returncode == 1
    assert "SEVERITY" in proc.stdout and "invalid_evidence" in proc.stdout and "retracted claim" in proc.stdout
    assert wiki_json(lab, "lint", "sessions", expect=1)["status"] == "error"


def test_cli_issue_tables_show_whole_messages_wrapped_to_the_terminal(lab: Lab) -> None:
    lab.write("sessions")
    lab.retract(lab.rid, lab.cid)
    lab.resync("A new bookmark")  # source_input_changed: a message with its advice at the end
    messages = [" ".join(i["message"].split()) for i in wiki_json(lab, "lint", expect=1)["issues"]]
    assert max(map(len, messages)) > 90  # longer than the table used to show
    for columns in ("300", "100"):
        proc = run_cli("wiki", "lint", data_dir=lab.core.data_dir, env={"COLUMNS": columns})
        assert proc.returncode == 1
        lines = proc.stdout.splitlines()
        assert max(map(len, lines)) <= int(columns)
        flat = " ".join(proc.stdout.split())
        assert all(m in flat for m in messages), (messages, proc.stdout)
        if columns == "300":  # room enough: one line per issue
            assert all(any(m in line for line in lines) for m in messages)
    got = run_cli("wiki", "get", "sessions", data_dir=lab.core.data_dir, env={"COLUMNS": "300"}).stdout
    rows = [line.split() for line in got.splitlines() if line.startswith(("error", "warning"))]
    assert rows and all(row[2] == "sessions" for row in rows)  # the PAGE column names the page


def test_cli_get_shows_the_page_to_read(lab: Lab) -> None:
    """Title, status, review, each section's heading and text, and per claim its statement and quotes."""
    long_text = "Sessions 可恢复 after a crash, and the inventory is kept frozen. " * 4
    lab.write("sessions", lab.page(sections=[
        {"heading": "Resuming", "text": long_text + "\n\nA second paragraph \x1b[31m.",
         "claims": [lab.ref(), lab.ref(lab.cid2)]},
        {"heading": "Hashing", "text": "Checked on load.", "claims": [lab.ref(lab.cid2)]}]))
    proc = run_cli("wiki", "get", "sessions", data_dir=lab.core.data_dir, env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    flat = " ".join(out.split())
    assert out.startswith("Reusable sessions  (sessions, topic, revision 1, ") and "current" in out.splitlines()[0]
    assert "Review (human, Ann): Checked against the source" in out
    assert "## Resuming" in out and "## Hashing" in out and "Checked on load." in out
    assert " ".join(long_text.split()) in flat and "A second paragraph \\x1b[31m." in out  # whole, escaped
    assert "\x1b" not in out and max(len(line) for line in out.splitlines()
                                     if "可" not in line and not line.startswith("view: ")) <= 80
    assert f"[{lab.rid}/{lab.cid}] Sessions resume after a crash" in out
    assert f"[{lab.rid}/{lab.cid2}] The inventory is re-hashed" in out
    assert f"“{QUOTE}” — {lab.url}" in flat and f"“{QUOTE2}” — {lab.url}" in flat
    assert out.count(QUOTE2) == 2  # under each section that cites it
    assert "## Hashing" in out.split(QUOTE)[-1]  # quotes follow their section's claims


def test_cli_open_refuses_a_missing_view(lab: Lab) -> None:
    proc = wiki_cli(lab, "open", "sessions")  # no wiki yet
    assert proc.returncode == 1 and "Unknown Wiki page" in proc.stderr
    lab.write("sessions")
    view = lab.wiki / "pages" / "sessions.md"
    assert wiki_json(lab, "open", "sessions") == {"page_id": "sessions", "revision": 1, "view_file": str(view)}
    view.unlink()
    proc = wiki_cli(lab, "open", "sessions")
    assert proc.returncode == 1 and proc.stdout == "" and proc.stderr.count("\n") == 1
    assert "current view of sessions is missing" in proc.stderr and "wiki lint" in proc.stderr
    assert "next write" in proc.stderr and str(view) in proc.stderr
    assert wiki_json(lab, "open", "sessions", expect=1)["error_kind"] == "storage"
    proc = wiki_cli(lab, "open", "nothing")
    assert proc.returncode == 1 and "Unknown Wiki page" in proc.stderr


def test_cli_acknowledge(lab: Lab) -> None:
    lab.write("sessions")
    lab.resync("A new bookmark")
    assert wiki_json(lab, "get", "sessions")["validation"]["status"] == "needs_review"
    out = wiki_json(lab, "ack", "sessions", "--note", "Reviewed the re-sync")
    assert out["revision"] == 2 and out["acknowledged_note"] == "Reviewed the re-sync"
    assert wiki_json(lab, "get", "sessions")["validation"]["status"] == "current"


@pytest.mark.parametrize("args,message,code", [
    (("get", "../x"), "page_id", 2),
    (("get", "nothing"), "Unknown Wiki page or revision", 1),
    (("write", "sessions", "--file", "/nonexistent.json"), "cannot read", 1),
    (("search", " "), "query", 2),
    (("get", "sessions", "--revision", "0"), "revision", 2),
    (("lint", "nothing"), "Unknown Wiki page: nothing", 1),
    (("lint", "nothing", "--json"), "Unknown Wiki page: nothing", 1),
])
def test_cli_errors_are_one_line(lab: Lab, args: tuple[str, ...], message: str, code: int) -> None:
    """Refused option values are usage errors (exit 2); other failures exit 1. Nothing changes."""
    lab.write("sessions")
    before = tree(lab.wiki)
    proc = wiki_cli(lab, *args)
    assert proc.returncode == code and message in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert tree(lab.wiki) == before


def test_cli_write_refuses_bad_json_and_a_missing_change_note(lab: Lab, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"title": "x", "title": "y"}')
    proc = wiki_cli(lab, "write", "sessions", "--file", str(bad))
    assert proc.returncode == 1 and "duplicate" in proc.stderr.lower()
    good = tmp_path / "page.json"
    good.write_text(json.dumps(lab.page()))
    proc = wiki_cli(lab, "write", "sessions", "--file", str(good))
    assert proc.returncode == 2 and "change_note" in proc.stderr  # neither option nor key: usage
    bad.write_text(json.dumps({"page": {**lab.page(), "kind": "essay"}, "change_note": "x"}))
    proc = wiki_cli(lab, "write", "sessions", "--file", str(bad))
    assert proc.returncode == 1 and "page.kind" in proc.stderr  # bad file content: exit 1, not 2
    assert not lab.wiki.exists()


@pytest.mark.parametrize("args,content,message,code", [
    (("UpperCase", "--change-note", "x"), {}, "page_id", 2),
    (("sessions", "--change-note", "x", "--expected-revision", "-1"), {}, "expected_revision", 2),
    (("sessions", "--change-note", "x", "--reviewed-input-version", "v" * 201), {}, "reviewed_input_version", 2),
    (("sessions",), {"change_note": ""}, "change_note", 1),
    (("sessions",), {"change_note": "x", "expected_revision": -1}, "expected_revision", 1),
    (("sessions", "--change-note", "x"), {"expected_revision": "one"}, "expected_revision", 1),
    (("sessions", "--change-note", "x"), {"extra": 1}, "extra", 1),
])
def test_cli_write_exit_code_says_where_the_bad_value_came_from(
        lab: Lab, tmp_path: Path, args: tuple[str, ...], content: dict[str, Any], message: str, code: int) -> None:
    """A refused PAGE_ID or option value is a usage error (2), a refused part of the page file bad data (1)."""
    page_file = tmp_path / "page.json"
    page_file.write_text(json.dumps({"page": lab.page(), **content}))
    proc = wiki_cli(lab, "write", args[0], "--file", str(page_file), *args[1:])
    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert not lab.wiki.exists()


def test_mcp_tools(lab: Lab) -> None:
    server = build_server(lab.core.app)
    results = mcp_call(server, [
        ("wiki_write", {"page_id": "sessions", "page": lab.page(), "change_note": "Create"}),
        ("wiki_get", {"page_id": "sessions"}),
        ("wiki_search", {"query": "可恢复"}),
        ("wiki_list", {}),
        ("wiki_lint", {}),
        ("wiki_write", {"page_id": "sessions", "page": lab.page(), "change_note": "Stale", "expected_revision": 0}),
        ("wiki_write", {"page_id": "../x", "page": lab.page(), "change_note": "Bad"}),
        ("wiki_search", {"query": "x" * 501}),
        ("wiki_lint", {"page_id": "nothing"}),
    ])
    written, got, found, listed, lint, stale, bad_id, long_query, unknown = results
    assert not written.is_error and written.structured_content["revision"] == 1
    assert got.structured_content["validation"]["status"] == "current"
    assert found.structured_content["total"] == 1
    assert listed.structured_content["total"] == 1 and lint.structured_content["status"] == "ok"
    for failed, message in ((stale, "revision changed"), (bad_id, "page_id"), (long_query, "query"),
                            (unknown, "Unknown Wiki page: nothing")):
        assert failed.is_error and message in mcp_payload(failed)["error"]
    assert mcp_payload(unknown)["error_kind"] == "not_found"


def test_mcp_tool_schemas_are_closed(lab: Lab) -> None:
    import anyio
    from mcp import Client

    async def tools() -> dict[str, Any]:
        async with Client(build_server(lab.core.app)) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    listed = anyio.run(tools)
    assert {"wiki_write", "wiki_acknowledge", "wiki_get", "wiki_list", "wiki_search", "wiki_lint"} <= set(listed)
    assert "wiki_open" not in listed  # a local path for an editor: terminal only
    schema = listed["wiki_write"].input_schema
    assert schema["additionalProperties"] is False and set(schema["required"]) == {"page_id", "page", "change_note"}
    assert listed["wiki_get"].annotations.read_only_hint and not listed["wiki_write"].annotations.read_only_hint


def test_mcp_follows_the_wiki_directory_setting(lab: Lab, tmp_path: Path) -> None:
    """A long-running server re-reads wiki.directory on every call (changed from a terminal)."""
    server = build_server(lab.core.app)
    other = str(tmp_path / "other-wiki")
    seen = []
    for value in (None, other, None):
        settings.update({"wiki.directory": value}, terminal=True)
        seen.append(mcp_call(server, [("wiki_list", {})])[0].structured_content["directory"])
    assert seen == [str(lab.wiki), other, str(lab.wiki)]
    refused = mcp_call(server, [("update_settings", {"changes": {"wiki.directory": other}})])[0]
    assert refused.is_error and "terminal" in mcp_payload(refused)["error"]


def test_cli_acknowledge_says_what_it_could_not_cover(lab: Lab) -> None:
    lab.write("sessions")
    lab.remove_input()
    proc = wiki_cli(lab, "ack", "sessions", "--note", "Looked again")
    assert proc.returncode == 0, proc.stderr
    assert f"not acknowledged: {lab.rid}: its bookmark input cannot be checked" in proc.stdout
    assert "stays needs_review" in proc.stdout
