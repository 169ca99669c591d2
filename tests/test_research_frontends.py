"""Every research operation from the CLI (subprocesses) and over MCP (the SDK client), incl. bad input."""

from __future__ import annotations

import json

import pytest

from bookmark_research.mcp.server import build_server
from tests.conftest import cli_json, mcp_call, mcp_payload, run_cli
from tests.research_support import PAGE, PageSite, allow_loopback, snapshot
from tests.wiki_support import QUOTE2, lab  # noqa: F401

OPS = ("research_start", "research_status", "research_inventory", "research_search", "research_fetch",
       "research_source", "research_import_evidence", "research_record", "research_coverage", "research_finish",
       "research_report", "research_route")


@pytest.fixture
def site():
    allow_loopback()
    with PageSite({"/docs": (200, PAGE, "text/plain")}) as s:
        yield s


def test_cli_session_end_to_end(core, site, tmp_path):
    d = core.data_dir
    url = site.base + "/docs"
    started = cli_json("research", "start", "--brief", "What does the service support?", "--question",
                       "q1=What does it support?", "--url", url, "--url", "https://example.org/other",
                       "--provider", "direct", "--budget-search", "1", data_dir=d)
    rid = started["research_id"]
    assert started["source_scope"]["selected_url_count"] == 2 and started["budget"]["max_search_calls"] == 1
    human = run_cli("research", "status", rid, data_dir=d)
    assert human.returncode == 0 and "q1 [open]" in human.stdout and "budget used" in human.stdout
    listed = cli_json("research", "status", data_dir=d)
    assert [s["research_id"] for s in listed["sessions"]] == [rid]
    inv = cli_json("research", "inventory", rid, "--limit", "1", data_dir=d)
    second = cli_json("research", "inventory", rid, "--offset", "1", data_dir=d)
    assert inv["next_offset"] == 1 and len(inv["items"] + second["items"]) == 2
    fetched = cli_json("research", "fetch", rid, url, "--operation-id", "f1", "--question", "q1", data_dir=d)
    assert fetched["sources"][0]["id"] == "s1" and fetched["status"] == "ok"
    text = run_cli("research", "source", rid, "s1", data_dir=d)
    assert text.returncode == 0 and text.stdout == PAGE + "\n"
    failed = run_cli("research", "search", rid, "--operation-id", "s1", "--query", "q1=rank fusion", "--provider",
                     "jina", "--json", data_dir=d)  # jina search needs a key: a classified failure, no network
    assert failed.returncode == 1 and json.loads(failed.stdout)["status"] == "error"
    assert failed.stderr.startswith("error: ") and "JINA_API_KEY" in failed.stderr
    payload = tmp_path / "import.json"
    payload.write_text(json.dumps({"operation_id": "i1", "question_id": "q1", "url": "https://example.org/other",
                                   "text": "The other page: “quoted text”.", "provenance": {"kind": "page"}}))
    assert cli_json("research", "import", rid, "--input", str(payload), data_dir=d)["source"]["id"] == "s2"
    batch = {"entries": [{"kind": "source_review", "source_id": s, "verdict": "accepted", "text": "ok"}
                         for s in ("s1", "s2")], "batch_id": "reviews"}
    assert cli_json("research", "record", rid, data_dir=d, input=json.dumps(batch))["count"] == 2
    recorded = run_cli("research", "record", rid, data_dir=d, input=json.dumps(
        {"kind": "claim", "question_id": "q1", "statement": "Quoted", "citations": [
            {"source_id": "s2", "quote": 'The other page: "quoted text".'}]}))
    assert recorded.returncode == 0 and "normalised match" in recorded.stdout
    ids = [e["id"] for e in inv["items"] + second["items"]]
    for iid, sid, quote in zip(ids, ("s1", "s2") if inv["items"][0]["original_url"] == url else ("s2", "s1"),
                               ("search and fetch", "quoted text") if inv["items"][0]["original_url"] == url
                               else ("quoted text", "search and fetch")):
        cli_json("research", "record", rid, data_dir=d, input=json.dumps(
            {"kind": "inventory_review", "inventory_id": iid, "disposition": "reviewed", "text": "read",
             "question_ids": ["q1"], "source_ids": [sid], "citations": [{"source_id": sid, "quote": quote}]}))
    cli_json("research", "record", rid, data_dir=d, input=json.dumps(
        {"kind": "answer", "question_id": "q1", "answer": "Search and fetch.", "claim_ids": ["c1"]}))
    unreviewed = cli_json("research", "coverage", rid, "--filter", "unreviewed", data_dir=d)
    assert unreviewed["total"] == 0 and unreviewed["completion_ready"] is True
    done = cli_json("research", "finish", rid, "--summary", "Done.", "--limitation", "Two pages only", data_dir=d)
    assert done["status"] == "completed"
    report = run_cli("research", "report", rid, data_dir=d)
    assert report.returncode == 0 and report.stdout.startswith("# What does the service support?")
    route = run_cli("research", "route", "--task-shape", "lookup", data_dir=d)
    assert route.returncode == 0 and "direct_retrieval" in route.stdout


def test_cli_bad_input_is_one_line_and_changes_nothing(core, tmp_path):
    d = core.data_dir
    rid = cli_json("research", "start", "--brief", "b", "--question", "q1=q", "--url", "https://example.org/",
                   data_dir=d)["research_id"]
    folder = d / "research" / rid
    before = snapshot(folder)
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "gap", "question_id": "q1", "text": "x", "text": "y"}')
    for args, kw, needle, code in [  # 2: an option value refused (usage); 1: bad data or state
        (("research", "status", "../x"), {}, "research_id", 2),
        (("research", "start", "--brief", "b", "--question", "no-equals-sign"), {}, "--question: expected ID=TEXT", 2),
        (("research", "start", "--brief", "b", "--question", "q1=a", "--budget-fetch", "81"), {}, "max_fetch_calls", 2),
        (("research", "record", rid, "--input", str(bad)), {}, "duplicate JSON key", 1),
        (("research", "record", rid), {"input": '{"kind": "gap", "question_id": "q1", "txt": "x"}'},
         "Unknown fields of a gap entry: txt (a gap takes question_id, text)", 1),
        (("research", "fetch", rid, "https://example.org/", "--operation-id", "../escape", "--question", "q1"), {},
         "operation_id", 2),
        (("research", "finish", rid, "--summary", "x"), {}, "Unanswered research questions remain", 1),
        (("research", "report", rid), {}, "no report yet", 1),
    ]:
        proc = run_cli(*args, data_dir=d, **kw)
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], (args, proc.stderr)
    assert snapshot(folder) == before
    assert [p.name for p in (d / "research").iterdir()] == [rid]


def test_every_operation_over_mcp(core, site):
    server = build_server(core.app)
    url = site.base + "/docs"
    started = mcp_call(server, [("research_start", {"brief": "b", "questions": [{"id": "q1", "question": "q"}],
                                                    "urls": [url], "providers": ["direct"]})])[0]
    assert not started.is_error
    rid = mcp_payload(started)["research_id"]
    results = mcp_call(server, [
        ("research_status", {"research_id": rid}),
        ("research_inventory", {"research_id": rid, "limit": 1}),
        ("research_fetch", {"research_id": rid, "operation_id": "f1", "question_id": "q1", "urls": [url]}),
        ("research_source", {"research_id": rid, "source_id": "s1", "limit": 10}),
        ("research_import_evidence", {"research_id": rid, "operation_id": "i1", "question_id": "q1", "url": url,
                                      "text": "Imported copy.", "provenance": {"kind": "archived_page"}}),
        ("research_record", {"research_id": rid, "entry": {"kind": "claim", "question_id": "q1", "statement": "s",
                                                            "citations": [{"source_id": "s1",
                                                                           "quote": "supports search"}]}}),
        ("research_record", {"research_id": rid, "entry": {"kind": "claim", "question_id": "q1", "statement": "s",
                                                            "citations": [{"source_id": "s1",
                                                                           "quote": "supports searching"}]}}),
        ("research_coverage", {"research_id": rid, "filter": "unread"}),
        ("research_search", {"research_id": rid, "operation_id": "s1", "providers": ["jina"],
                             "queries": [{"question_id": "q1", "query": "rank fusion"}]}),
        ("research_record", {"research_id": rid, "entry": {"kind": "answer", "question_id": "q1", "answer": "a",
                                                            "claim_ids": ["c1"]}}),
        ("research_finish", {"research_id": rid, "summary": "s"}),
        ("research_finish", {"research_id": rid, "summary": "s", "status": "incomplete"}),
        ("research_report", {"research_id": rid}),
        ("research_route", {"task_shape": "batch_research", "observed_tools": ["mcp__exa__web_search_exa",
                                                                               "mcp__exa__web_fetch_exa"]}),
        ("research_status", {"research_id": "../x"}),
        ("research_start", {"brief": "b", "questions": [{"id": "q1", "question": "q"}], "budget": {"max_rounds": True}}),
    ])
    payloads = [mcp_payload(r) for r in results]
    errors = [r.is_error for r in results]
    assert errors == [False, False, False, False, False, False, True, False, True, False, True, False, False, False,
                      True, True]
    assert payloads[1]["next_offset"] is None and payloads[2]["sources"][0]["id"] == "s1"
    assert payloads[3]["text"] == PAGE[:10] and payloads[4]["source"]["id"] == "s2"
    assert "closest passage" in payloads[6]["error"] and payloads[7]["total"] == 1
    assert payloads[8]["status"] == "error"  # isError, with the receipt as structured content
    assert "coverage incomplete" in payloads[10]["error"] and payloads[11]["status"] == "incomplete"
    assert payloads[12]["text"].startswith("# b") and payloads[13]["selected"]["route_id"] == "host_research_mcp:exa"
    assert "research_id" in payloads[14]["error"] and "max_rounds" in payloads[15]["error"]

    import anyio
    from mcp import Client

    async def tools():
        async with Client(server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    listed = anyio.run(tools)
    for name in OPS:
        assert name in listed and listed[name].input_schema.get("additionalProperties") is False
    assert listed["research_status"].annotations.read_only_hint is True
    assert listed["research_fetch"].annotations.read_only_hint is False


def test_cli_record_of_a_retraction_says_what_was_recorded(lab):
    """Not the claim's quote check ("s1 exact match at 0–46"), as if a quote had just been verified."""
    out = run_cli("research", "record", lab.rid, data_dir=lab.core.data_dir, input=json.dumps(
        {"kind": "retraction", "claim_id": lab.cid, "text": "Overstated"}))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"Recorded retraction of claim {lab.cid}: Sessions resume after a crash",
                                       "  reason: Overstated"]
    claim = run_cli("research", "record", lab.rid, data_dir=lab.core.data_dir, input=json.dumps(
        {"kind": "claim", "question_id": "q1", "statement": "Again", "citations": [
            {"source_id": lab.sid, "quote": QUOTE2}]}))
    assert claim.returncode == 0 and f"{lab.sid} exact match at " in claim.stdout  # a claim still shows its check
