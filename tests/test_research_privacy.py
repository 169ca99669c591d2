"""What leaves the machine: only queries and URLs (canaries in notes, tags, scope and source ids never reach a
provider); scholarly search results become sources with DOI, venue and year."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

import bookmark_research.providers.remote_mcp as remote_mcp
import bookmark_research.providers.websearch as websearch
from bookmark_research.providers import scholarly
from tests.packages import TEMP_PATH, make_demo, read_json, write_json
from tests.remote_providers import SEEN, RemoteProviders
from tests.research_support import claim, record

NOTE, TAG, SCOPE, SOURCE = "CANARY-NOTE-7f3a", "CANARY-TAG-91bc", "CANARY-SCOPE-44d0", "canary-private-source"
DOI = "10.1000/xyz123"


@pytest.fixture
def remote(monkeypatch):
    with RemoteProviders() as servers:
        monkeypatch.setattr(remote_mcp, "ENDPOINTS", dict(servers.endpoints))
        monkeypatch.setattr(websearch, "_cooldowns", {})
        SEEN.clear()
        yield servers


def test_notes_tags_scope_and_source_ids_never_reach_a_provider(core, tmp_path, remote, monkeypatch):
    package = make_demo(tmp_path / "export")
    section = read_json(package / TEMP_PATH)

    def mark(items):
        for item in items:
            if item.get("type") == "bookmark":
                item.update(note=NOTE, tags=[{"color": "red", "text": TAG}])
            mark(item.get("children", []))

    mark(section["items"])
    write_json(package / TEMP_PATH, section)
    core.sync(package, source_id=SOURCE)
    assert core.total(SOURCE, NOTE) > 0  # the canaries are really in the index
    out = core("research_start", brief="Find what the pages say", scope=f"{SCOPE} must stay local",
               questions=[{"id": "q1", "question": "What do they say?"}], source_ids=[SOURCE],
               providers=["exa", "parallel", "tavily", "jina"])
    rid = out["research_id"]
    urls = [e["original_url"] for e in core("research_inventory", research_id=rid)["items"]]
    monkeypatch.setenv("JINA_API_KEY", "jina-key-for-test")
    monkeypatch.setenv("OPENALEX_API_KEY", "openalex-key-for-test")
    requests: list[httpx.Request] = []  # recorded by hand: respx's own call log misses worker threads

    def answer(payload):
        def respond(request):
            requests.append(request)
            return httpx.Response(200, json=payload)
        return respond

    with respx.mock(assert_all_called=False) as http:
        http.route(host="127.0.0.1").pass_through()
        http.get(url__startswith="https://s.jina.ai/").mock(side_effect=answer({"data": []}))
        http.get(url__startswith="https://r.jina.ai/").mock(side_effect=answer({
            "data": {"title": "t", "url": urls[0], "content": "Reader text. " * 30}}))
        http.get(scholarly.OPENALEX).mock(side_effect=answer({"results": []}))
        http.get(scholarly.SEMANTIC_SCHOLAR).mock(side_effect=answer({"total": 0, "data": []}))
        core("research_search", research_id=rid, operation_id="web", queries=[{"question_id": "q1",
                                                                               "query": "rank fusion"}])
        core("research_search", research_id=rid, operation_id="papers", kind="scholarly",
             queries=[{"question_id": "q1", "query": "rank fusion"}])
        core("research_fetch", research_id=rid, operation_id="pages", question_id="q1", urls=urls[:2])
        core("research_fetch", research_id=rid, operation_id="reader", question_id="q1", urls=urls[2:3],
             provider="jina")
    sent = json.dumps(SEEN) + "".join(f"{r.url} {dict(r.headers)} {r.content!r}" for r in requests)
    assert SEEN["exa"] and SEEN["parallel"] and SEEN["tavily"] and len(requests) >= 3
    for canary in (NOTE, TAG, SCOPE, SOURCE):
        assert canary not in sent
    assert NOTE not in (core.data_dir / "research" / rid / "context.json").read_text()


@respx.mock
def test_scholarly_search_records_become_citable_sources(core, monkeypatch):
    monkeypatch.setenv("OPENALEX_API_KEY", "openalex-key-for-test")
    respx.get(scholarly.OPENALEX).mock(return_value=httpx.Response(200, json={"results": [{
        "id": "https://openalex.org/W1", "display_name": "Graph retrieval and generation", "publication_year": 2024,
        "doi": f"https://doi.org/{DOI}", "authorships": [{"author": {"display_name": "Ada L."}}],
        "primary_location": {"source": {"display_name": "J. Retrieval"}},
        "abstract_inverted_index": {"Graphs": [0], "help": [1], "retrieval.": [2]}}]}))
    crossref = respx.get(scholarly.CROSSREF).mock(return_value=httpx.Response(200, json={"message": {"items": [{
        "DOI": DOI, "title": ["Graph retrieval and generation"], "issued": {"date-parts": [[2024, 1, 2]]},
        "container-title": ["Journal of Retrieval"], "URL": f"https://doi.org/{DOI}",
        "author": [{"given": "Ada", "family": "L."}]}]}}))
    rid = core("research_start", brief="b", questions=[{"id": "q1", "question": "q"}],
               urls=[f"https://doi.org/{DOI}"])["research_id"]
    out = core("research_search", research_id=rid, operation_id="papers", kind="scholarly",
               providers=["openalex", "crossref"], queries=[{"question_id": "q1", "query": "graph retrieval"}])
    assert out["status"] == "ok" and crossref.called
    source = out["sources"][0]
    assert (source["id"], source["doi"], source["venue"], source["year"]) == ("s1", DOI, "Journal of Retrieval", 2024)
    assert source["evidence_kind"] == "scholarly_record" and source["inventory_ids"] == []
    assert source["referenced_inventory_ids"]  # the bookmark is the DOI page, but an abstract is not the page
    usage = core("research_status", research_id=rid)["usage"]
    assert usage == {"search_calls": 2, "fetch_calls": 0, "rounds": 1}
    assert claim(core, rid, "s1", "Graphs help retrieval.")["recorded"]["citations"][0]["match"] == "exact"
    record(core, rid, kind="source_review", source_id="s1", verdict="accepted", text="Peer reviewed")
    cov = core("research_coverage", research_id=rid)
    assert cov["metrics"]["usable_text"]["count"] == 0 and cov["metrics"]["accounted_for"]["count"] == 0
    again = core("research_search", research_id=rid, operation_id="papers", kind="scholarly",
                 providers=["openalex", "crossref"], queries=[{"question_id": "q1", "query": "graph retrieval"}])
    assert again["replayed"] is True and crossref.call_count == 1
