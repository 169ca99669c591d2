"""research_search and research_fetch against the stand-in providers: budgets, replays, waterfalls, recovery."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
import respx

import bookmark_research.providers.remote_mcp as remote_mcp
import bookmark_research.providers.websearch as websearch
from bookmark_research.config.settings import update
from bookmark_research.core.app import App
from bookmark_research.core.registry import run
from bookmark_research.errors import BookmarkResearchError, StorageError
from bookmark_research.research import store
from tests.conftest import cli_json
from tests.remote_providers import SEEN, RemoteProviders
from tests.research_support import PAGE, PageSite, allow_loopback, claim, record, snapshot, start

DOWN = "http://127.0.0.1:9/mcp"


@pytest.fixture(scope="module")
def servers():
    with RemoteProviders() as running:
        yield running


@pytest.fixture
def remote(servers, monkeypatch):
    monkeypatch.setattr(remote_mcp, "ENDPOINTS", dict(servers.endpoints))
    monkeypatch.setattr(websearch, "_cooldowns", {})
    SEEN.clear()
    return servers


@pytest.fixture
def site():
    allow_loopback()
    pages = {"/docs": (200, PAGE, "text/plain"), "/other": (200, "Calls may return partial excerpts.", "text/plain"),
             "/slow/page": (200, PAGE, "text/plain"),
             "/login": (200, "<html><head><title>Sign in</title></head><body><form><input name=u>"
                             "<input type=password name=p></form><p>Please sign in to continue.</p></body></html>",
                        "text/html")}
    with PageSite(pages) as s:
        yield s


def calls(provider: str, tool: str) -> list[dict]:
    return [c for c in SEEN.get(provider, []) if c["tool"] == tool]


def test_search_replays_across_processes_and_refuses_other_arguments(core, remote):
    rid = start(core, providers=["exa", "parallel"])["research_id"]
    first = core("research_search", research_id=rid, operation_id="round1-search",
                 queries=[{"question_id": "q1", "query": "rank fusion"}])
    assert first["replayed"] is False and first["status"] == "ok"
    assert core("research_status", research_id=rid)["usage"] == {"search_calls": 2, "fetch_calls": 0, "rounds": 1}
    seen = json.dumps(SEEN)
    again = cli_json("research", "search", rid, "--operation-id", "round1-search", "--query", "q1=rank fusion",
                     data_dir=core.data_dir)  # a new process: nothing is sent again
    assert again["replayed"] is True and again["result"] == first["result"] and json.dumps(SEEN) == seen
    with pytest.raises(BookmarkResearchError, match="operation_id already exists with different arguments"):
        core("research_search", research_id=rid, operation_id="round1-search",
             queries=[{"question_id": "q1", "query": "something else"}])
    assert first["result"]["targets"][0]["results"]  # snippets are leads: no sources were created
    assert core("research_status", research_id=rid)["counts"]["sources"] == 0


def test_budget_blocks_before_any_network_request(core, remote):
    out = start(core, providers=["exa", "parallel"], budget={"max_search_calls": 2, "max_rounds": 1})
    rid = out["research_id"]
    query = {"question_id": "q1", "query": "rank fusion"}
    core("research_search", research_id=rid, operation_id="s1", queries=[query, query])
    assert core("research_status", research_id=rid)["usage"]["search_calls"] == 2
    before, seen = snapshot(out["directory"]), json.dumps(SEEN)
    with pytest.raises(BookmarkResearchError, match="Research budget exhausted: search_calls"):
        core("research_search", research_id=rid, operation_id="s2", queries=[query])
    assert snapshot(out["directory"]) == before and json.dumps(SEEN) == seen
    for bad, match in [({"queries": [{"question_id": "q9", "query": "x"}]}, "Unknown question: q9"),
                       ({"queries": [{"question_id": "q1", "query": "x", "extra": 1}]}, "extra"),
                       ({"operation_id": "../escape"}, "operation_id"),
                       ({"providers": ["openalex"]}, "kind=scholarly")]:
        with pytest.raises(BookmarkResearchError, match=match):
            core("research_search", **{"research_id": rid, "operation_id": "s3", "queries": [query], **bad})
    assert snapshot(out["directory"]) == before


def test_search_fallback_is_trimmed_to_the_remaining_budget(core, remote, monkeypatch):
    monkeypatch.setitem(remote_mcp.ENDPOINTS, "parallel", DOWN)
    rid = start(core, budget={"max_search_calls": 5})["research_id"]  # settings: exa, parallel; then tavily, jina
    queries = [{"question_id": "q1", "query": "boom first"}, {"question_id": "q1", "query": "boom second"}]
    out = core("research_search", research_id=rid, operation_id="fallback", queries=queries)
    result = out["result"]
    assert out["status"] == "partial" and result["successful_provider_count"] == 1  # tavily answered, others failed
    assert [c["query"] for c in calls("tavily", "tavily_search")] == ["boom first"]
    assert result["remaining_attempts"] == [{"provider": "tavily", "target": "q1", "query": "boom second",
                                             "reason": "budget"}]
    assert {"target": "q1", "query": "boom second"} in result["unresolved_queries"]
    status = core("research_status", research_id=rid)
    assert status["usage"] == {"search_calls": 5, "fetch_calls": 0, "rounds": 1}
    op = core("research_status", research_id=rid, section="operations")["items"][0]
    assert op["reserved"] == {"search_calls": 5, "rounds": 1} and op["fallback_attempts"] == [
        {"provider": "tavily", "target": "q1", "query": "boom first"}]
    update({"search.fallback_providers": []}, terminal=False)
    assert core("research_search", research_id=rid, operation_id="fallback", queries=queries)["result"] == result


def test_fetch_waterfall_reserves_each_stage_and_keeps_each_response(core, remote):
    rid = start(core, ["https://docs.example/a", "https://docs.example/missing"], providers=["exa", "parallel"],
                budget={"max_fetch_calls": 3})["research_id"]
    out = core("research_fetch", research_id=rid, operation_id="f1", question_id="q1",
               urls=["https://docs.example/a", "https://docs.example/missing"])
    assert [s["provider"] for s in out["sources"]] == ["exa", "exa", "parallel"]
    assert [s["id"] for s in out["sources"]] == ["s1", "s2", "s3"]
    assert calls("parallel", "web_fetch")[0]["urls"] == ["https://docs.example/missing"]
    folder = core.data_dir / "research" / rid
    for source, server in zip(out["sources"], ("fake-exa", "fake-exa", "fake-parallel")):
        raw = json.loads((folder / source["response_file"]).read_text())  # each source keeps its provider's response
        assert raw["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == server
    assert "https://docs.example/missing" in (folder / out["sources"][2]["response_file"]).read_text()
    assert out["sources"][0]["inventory_ids"] and out["sources"][2]["extraction_status"] == "insufficient_content"
    op = core("research_status", research_id=rid, section="operations")["items"][0]
    assert op["reserved"] == {"fetch_calls": 2} and op["fallback_attempts"] == ["parallel"]
    core.reopen()
    seen = json.dumps(SEEN)
    assert core("research_fetch", research_id=rid, operation_id="f1", question_id="q1",
                urls=["https://docs.example/a", "https://docs.example/missing"])["replayed"] is True
    assert json.dumps(SEEN) == seen
    with pytest.raises(BookmarkResearchError, match="no extracted page text"):
        claim(core, rid, "s3", "only an excerpt")  # excerpts are not the page
    # an operation first run with an explicit provider replays when repeated without it (legacy shape)
    core("research_fetch", research_id=rid, operation_id="f2", question_id="q1", urls=["https://docs.example/a"],
         provider="exa", reuse_archive=False)
    seen = json.dumps(SEEN)
    legacy = core("research_fetch", research_id=rid, operation_id="f2", question_id="q1",
                  urls=["https://docs.example/a"], reuse_archive=False)
    assert legacy["replayed"] is True and json.dumps(SEEN) == seen


def test_budget_stop_is_visible(core, remote, monkeypatch):
    monkeypatch.setitem(remote_mcp.ENDPOINTS, "exa", DOWN)
    rid = start(core, ["https://docs.example/a"], providers=["exa", "parallel"], budget={"max_fetch_calls": 1})[
        "research_id"]
    out = core("research_fetch", research_id=rid, operation_id="f1", question_id="q1", urls=["https://docs.example/a"])
    assert out["status"] == "error" and out["unresolved_urls"] == ["https://docs.example/a"]
    assert out["remaining_providers"] == ["parallel"] and "parallel" not in SEEN
    assert out["attempts"][0]["error_kind"] == "connection_error" and out["sources"] == []


@respx.mock
def test_jina_reserves_per_url_and_failures_keep_their_reservation(core, monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", "jina-test-key")
    reader = respx.get(url__startswith="https://r.jina.ai/").mock(return_value=httpx.Response(429, text="slow down"))
    rid = start(core, ["https://a.example/1", "https://a.example/2"], providers=["jina"],
                budget={"max_fetch_calls": 1})["research_id"]
    with pytest.raises(BookmarkResearchError, match="budget exhausted: fetch_calls"):
        core("research_fetch", research_id=rid, operation_id="f1", question_id="q1",
             urls=["https://a.example/1", "https://a.example/2"])
    assert not reader.called
    out = core("research_fetch", research_id=rid, operation_id="f2", question_id="q1", urls=["https://a.example/1"])
    assert out["status"] == "error" and out["attempts"][0]["error_kind"] == "rate_limited"
    assert core("research_status", research_id=rid)["usage"]["fetch_calls"] == 1
    assert core("research_fetch", research_id=rid, operation_id="f2", question_id="q1",
                urls=["https://a.example/1"])["replayed"] is True
    with pytest.raises(BookmarkResearchError, match="budget exhausted"):
        core("research_fetch", research_id=rid, operation_id="f3", question_id="q1", urls=["https://a.example/1"])
    assert reader.call_count == 1


def test_direct_fetch_saves_raw_response_and_pages_the_text(core, site):
    update({"archive.enabled": False}, terminal=False)
    rid = start(core, [site.base + "/docs", site.base + "/login"], providers=["direct"])["research_id"]
    out = core("research_fetch", research_id=rid, operation_id="f1", question_id="q1",
               urls=[site.base + "/docs", site.base + "/login"])
    docs, login = out["sources"]
    assert docs["extraction_status"] == "extracted" and docs["completeness"] == "unknown"
    assert docs["published_at"] is None and docs["inventory_ids"] and docs["archive_reuse"] is None
    raw = json.loads((core.data_dir / "research" / rid / docs["response_file"]).read_text())
    assert raw["responses"][0]["url"] == site.base + "/docs"
    assert not (core.data_dir / "archive").exists()  # archive disabled: only the session keeps it
    page = core("research_source", research_id=rid, source_id="s1", limit=8)
    rest = core("research_source", research_id=rid, source_id="s1", offset=8, limit=50_000)
    assert page["text"] + rest["text"] == PAGE
    assert login["extraction_status"] == "login_required" and out["status"] == "partial"
    with pytest.raises(BookmarkResearchError, match="no extracted page text"):
        claim(core, rid, "s2", "Please sign in")
    assert core("research_status", research_id=rid)["usage"]["fetch_calls"] == 2  # direct: one unit per URL


def test_pages_in_the_archive_are_reused_and_say_so(core, site):
    first = start(core, [site.base + "/docs"], providers=["direct"])["research_id"]
    core("research_fetch", research_id=first, operation_id="f1", question_id="q1", urls=[site.base + "/docs"])
    hits = list(site.hits)
    second = start(core, [site.base + "/docs"], providers=["direct"])["research_id"]
    out = core("research_fetch", research_id=second, operation_id="f1", question_id="q1", urls=[site.base + "/docs"])
    source = out["sources"][0]
    assert site.hits == hits and out["status"] == "ok" and out["per_url"][0]["archive_reuse"] is True
    assert source["archive_reuse"]["capture_id"] and source["provider"] == "direct"
    assert core("research_status", research_id=second)["usage"]["fetch_calls"] == 0
    assert core("research_source", research_id=second, source_id="s1")["text"] == PAGE
    assert claim(core, second, "s1", "Calls may return partial excerpts.")["id"] == "c1"
    again = core("research_fetch", research_id=second, operation_id="f2", question_id="q1",
                 urls=[site.base + "/docs"], reuse_archive=False)
    assert again["sources"][0]["archive_reuse"] is None and site.hits.count("/docs") == 2


def test_checkpoint_failure_after_the_receipt_is_recovered(core, site, monkeypatch):
    rid = start(core, [site.base + "/docs", site.base + "/other"], providers=["direct"])["research_id"]
    original = store.Session.save

    def failing(self):
        if any(op["status"] != "pending" for op in self.state["operations"]):
            raise StorageError("disk full")
        original(self)

    monkeypatch.setattr(store.Session, "save", failing)
    with pytest.raises(StorageError, match="disk full"):
        core("research_fetch", research_id=rid, operation_id="f1", question_id="q1", urls=[site.base + "/docs"])
    monkeypatch.setattr(store.Session, "save", original)
    on_disk = json.loads((core.data_dir / "research" / rid / "state.json").read_text())
    assert on_disk["operations"][0]["status"] == "pending" and on_disk["sources"] == []
    core.reopen()
    status = core("research_status", research_id=rid)
    assert status["operations"][0]["status"] == "ok" and [s["id"] for s in status["sources"]] == ["s1"]
    assert core("research_source", research_id=rid, source_id="s1")["text"] == PAGE
    replay = core("research_fetch", research_id=rid, operation_id="f1", question_id="q1", urls=[site.base + "/docs"])
    assert replay["replayed"] is True and "_commit" not in replay
    nxt = core("research_fetch", research_id=rid, operation_id="f2", question_id="q1", urls=[site.base + "/other"],
               reuse_archive=False)
    assert nxt["sources"][0]["id"] == "s2"
    saved = json.loads((core.data_dir / "research" / rid / "state.json").read_text())
    assert [s["id"] for s in saved["sources"]] == ["s1", "s2"] and saved["usage"]["fetch_calls"] == 2


def test_an_interrupted_request_stays_pending_until_acknowledged(core, site, monkeypatch):
    import bookmark_research.evidence.fetch as fetch_module

    rid = start(core, providers=["direct"])["research_id"]
    record(core, rid, kind="question", id="q2", question="Second?")

    class Interrupting:
        name = "direct"

        def fetch(self, urls, max_characters):
            raise KeyboardInterrupt("interrupted while the provider was called")

        def close(self):
            pass

    monkeypatch.setattr(fetch_module, "make_fetcher", lambda name, settings: Interrupting())
    with pytest.raises(KeyboardInterrupt, match="operation lost stays pending and used 1 fetch call"):
        core("research_fetch", research_id=rid, operation_id="lost", question_id="q1", urls=[site.base + "/docs"])
    monkeypatch.undo()
    allow_loopback()
    replay = core("research_fetch", research_id=rid, operation_id="lost", question_id="q1", urls=[site.base + "/docs"])
    assert replay["replayed"] is True and replay["operation"]["status"] == "pending" and "acknowledge" in replay[
        "next_action"]
    good = core("research_fetch", research_id=rid, operation_id="good", question_id="q1", urls=[site.base + "/docs"])
    claim(core, rid, good["sources"][0]["id"], "Calls may return partial excerpts.")
    claim(core, rid, good["sources"][0]["id"], "the service supports search", question="q2")
    record(core, rid, kind="answer", question_id="q1", answer="Partial excerpts.", claim_ids=["c1"])
    record(core, rid, kind="answer", question_id="q2", answer="Search.", claim_ids=["c2"])
    with pytest.raises(BookmarkResearchError, match="interrupted operation needs acknowledgement"):
        core("research_finish", research_id=rid, summary="done")
    acked = record(core, rid, kind="interruption", operation_id="lost", text="The process was killed mid-request")
    assert acked["recorded"]["status"] == "unknown_outcome"
    done = core("research_finish", research_id=rid, summary="done")
    assert done["status"] == "completed" and done["usage"]["fetch_calls"] == 2
    report = (core.data_dir / "research" / rid / "report.md").read_text()
    assert "lost (fetch): unknown_outcome" in report


def test_two_sessions_racing_for_the_last_unit_get_exactly_one(core, remote):
    rid = start(core, providers=["exa"], budget={"max_search_calls": 1})["research_id"]
    results: list[str] = []
    barrier = threading.Barrier(2)

    def go(op: str) -> None:
        with App(core.data_dir) as app:
            barrier.wait()
            try:
                run(app, "research_search", {"research_id": rid, "operation_id": op,
                                             "queries": [{"question_id": "q1", "query": "rank fusion"}]})
                results.append("ok")
            except BookmarkResearchError as exc:
                results.append(exc.message)

    threads = [threading.Thread(target=go, args=(op,)) for op in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results)[0].startswith("Research budget exhausted") and sorted(results)[1] == "ok"
    assert len(calls("exa", "web_search_exa")) == 1


def test_the_lock_is_not_held_across_the_network(core, site):
    rid = start(core, [site.base + "/slow/page"], providers=["direct"])["research_id"]
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(run(App(core.data_dir), "research_fetch", {
        "research_id": rid, "operation_id": "slow", "question_id": "q1", "urls": [site.base + "/slow/page"]}
    ).model_dump(mode="json")))
    worker.start()
    assert site.entered.wait(10)
    began = time.monotonic()
    record(core, rid, kind="gap", question_id="q1", text="Still reading")
    assert time.monotonic() - began < 5
    site.release.set()
    worker.join(20)
    assert result["status"] == "ok" and result["sources"][0]["id"] == "s1"
    status = core("research_status", research_id=rid)
    assert status["questions"][0]["gap"] == "Still reading" and status["counts"]["sources"] == 1


@pytest.mark.parametrize("how", ["cancelled", "interruption"])
def test_late_results_after_a_terminal_state_are_not_committed(core, site, how):
    rid = start(core, [site.base + "/slow/page"], providers=["direct"])["research_id"]
    errors: list[str] = []

    def go() -> None:
        try:
            run(App(core.data_dir), "research_fetch", {"research_id": rid, "operation_id": "slow", "question_id": "q1",
                                                       "urls": [site.base + "/slow/page"]})
        except BookmarkResearchError as exc:
            errors.append(exc.message)

    worker = threading.Thread(target=go)
    worker.start()
    assert site.entered.wait(10)
    if how == "cancelled":
        core("research_finish", research_id=rid, summary="stopped", status="cancelled")
    else:
        record(core, rid, kind="interruption", operation_id="slow", text="gave up waiting")
    folder = core.data_dir / "research" / rid
    before = snapshot(folder)
    site.release.set()
    worker.join(20)
    assert errors and ("closed" in errors[0] if how == "cancelled" else "no longer pending" in errors[0])
    after = snapshot(folder)
    assert {k: v for k, v in after.items() if not k.startswith("evidence/")} == \
        {k: v for k, v in before.items() if not k.startswith("evidence/")}
    assert json.loads((folder / "state.json").read_text())["sources"] == []


def test_invalid_fetch_arguments_reserve_nothing(core, site):
    out = start(core, [site.base + "/docs"], providers=["direct"])
    rid = out["research_id"]
    before = snapshot(out["directory"])
    for bad, match in [({"question_id": "q9"}, "Unknown question: q9"),
                       ({"urls": ["https://user:pw@example.org/"]}, "credentials"),
                       ({"urls": ["ftp://example.org/x"]}, "http"),
                       ({"urls": [site.base + f"/{i}" for i in range(9)]}, "urls"),
                       ({"max_characters": True}, "max_characters"), ({"provider": "bing"}, "provider"),
                       ({"operation_id": "../escape"}, "operation_id"), ({"kind": []}, "kind")]:
        with pytest.raises(BookmarkResearchError, match=match):
            core("research_fetch", **{"research_id": rid, "operation_id": "f", "question_id": "q1",
                                      "urls": [site.base + "/docs"], **bad})
    assert snapshot(out["directory"]) == before and site.hits == []


def test_an_archive_failure_keeps_the_provider_outcome(core, site, monkeypatch):
    from bookmark_research.research import retrieval

    def broken(*args, **kwargs):
        raise StorageError("cannot write the evidence archive (No space left on device)")

    monkeypatch.setattr(retrieval, "save", broken)
    rid = start(core, [site.base + "/docs"], providers=["direct"])["research_id"]
    out = core("research_fetch", research_id=rid, operation_id="f1", question_id="q1", urls=[site.base + "/docs"])
    assert out["status"] == "error" and out["error_kind"] == "archive_error" and out["sources"] == []
    assert out["provider_outcome"][0]["result"]["responses"][0]["body"] == PAGE  # the raw response is kept
    hits = list(site.hits)
    monkeypatch.undo()
    assert core("research_fetch", research_id=rid, operation_id="f1", question_id="q1",
                urls=[site.base + "/docs"])["replayed"] is True and site.hits == hits
