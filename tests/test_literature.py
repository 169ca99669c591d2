"""Scholarly providers with respx: request shape and auth placement, parsing, routing, dedupe, failures."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from bookmark_research.errors import BookmarkResearchError
from bookmark_research.providers import scholarly
from tests.conftest import cli_json, run_cli

CANARY = "scholar-canary-4b7e"
DOI = "10.1000/xyz123"

OPENALEX = {"results": [{"id": "https://openalex.org/W1", "display_name": "Graph retrieval &amp; generation",
                         "publication_year": 2024, "doi": f"https://doi.org/{DOI.upper()}",
                         "authorships": [{"author": {"display_name": "Ada L."}}],
                         "primary_location": {"source": {"display_name": "J. Retrieval"}},
                         "abstract_inverted_index": {"Graphs": [0], "help": [1], "retrieval.": [2]}}]}
S2 = {"total": 2, "data": [
    {"paperId": "s1", "title": "Graph Retrieval & Generation", "year": 2024, "venue": "JR", "url": "https://s2/s1",
     "externalIds": {"DOI": DOI}, "authors": [{"name": "Ada L."}], "abstract": None},
    {"paperId": "s2", "title": "Another paper", "year": 2023, "venue": "X", "url": "https://s2/s2", "externalIds": {},
     "authors": [], "abstract": "Only in S2."}]}
CROSSREF = {"message": {"items": [{"DOI": DOI, "title": ["Graph retrieval and generation"], "issued": {
    "date-parts": [[2024, 1, 2]]}, "container-title": ["Journal of Retrieval"], "URL": f"https://doi.org/{DOI}",
    "author": [{"given": "Ada", "family": "L."}], "abstract": "<jats:p>Crossref abstract</jats:p>"}]}}
ARXIV = b"""<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
<entry><id>http://arxiv.org/abs/2401.00001v1</id><published>2023-06-01T00:00:00Z</published>
<title>Another
 paper</title><summary>The arXiv abstract.</summary><author><name>Bo C.</name></author></entry></feed>"""


@pytest.fixture
def apis():
    with respx.mock(assert_all_called=False) as mock:
        mock.get(scholarly.OPENALEX).mock(return_value=httpx.Response(200, json=OPENALEX))
        mock.get(scholarly.SEMANTIC_SCHOLAR).mock(return_value=httpx.Response(200, json=S2))
        mock.get(scholarly.CROSSREF).mock(return_value=httpx.Response(200, json=CROSSREF))
        mock.get(f"{scholarly.CROSSREF}/{DOI}").mock(return_value=httpx.Response(200, json={
            "message": CROSSREF["message"]["items"][0]}))
        mock.get(scholarly.ARXIV).mock(return_value=httpx.Response(200, content=ARXIV))
        mock.get(scholarly.PUBMED_SEARCH).mock(return_value=httpx.Response(200, json={
            "esearchresult": {"idlist": ["111"]}}))
        mock.get(scholarly.PUBMED_SUMMARY).mock(return_value=httpx.Response(200, json={"result": {
            "uids": ["111"], "111": {"title": "Clinical graphs", "pubdate": "2022 Mar", "fulljournalname": "Med J",
                                     "authors": [{"name": "Cy D"}], "articleids": [{"idtype": "doi", "value": "10.5/m"}]}}}))
        yield mock


def test_all_providers_merge_by_doi_then_title(core, apis, monkeypatch):
    monkeypatch.setenv("OPENALEX_API_KEY", CANARY)
    monkeypatch.setenv("SEMANTIC_SCHOLAR_API_KEY", CANARY + "-s2")
    out = core("literature_search", query="graph retrieval", mode="review")
    assert out["status"] == "ok" and out["routing"]["providers"] == list(scholarly.ALL)
    first = out["records"][0]
    assert first["doi"] == DOI and set(first["providers"]) == {"openalex", "semantic_scholar", "crossref"}
    assert first["abstract"] == "Graphs help retrieval." and first["title"] == "Graph retrieval and generation"
    assert first["ids"]["semantic_scholar"] == "s1"
    another = next(r for r in out["records"] if r["title"].startswith("Another"))
    assert set(another["providers"]) == {"semantic_scholar", "arxiv"} and another["abstract"] == "The arXiv abstract."
    assert out["total"] == 3
    oa = apis.routes[0].calls[0].request
    assert oa.url.params["api_key"] == CANARY and oa.url.params["per_page"] == "50"
    s2 = apis.routes[1].calls[0].request
    assert s2.headers["x-api-key"] == CANARY + "-s2" and "api_key" not in s2.url.params
    assert CANARY not in json.dumps(out)


def test_routing_and_unconfigured_provider_is_skipped(core, apis):
    out = core("literature_search", query=DOI)
    assert out["routing"]["providers"][0] == "crossref"
    openalex = next(d for d in out["diagnostics"]["providers"] if d["provider"] == "openalex")
    assert openalex == {"provider": "openalex", "status": "skipped", "count": 0, "missing": ["OPENALEX_API_KEY"],
                        "error_kind": "authentication_required"}
    assert out["status"] == "warning" and out["diagnostics"]["status"] == "partial"
    assert apis.routes[3].called  # the DOI went to Crossref's singleton endpoint
    bio = core("literature_search", query="cancer immunotherapy trial", providers=None)
    assert bio["routing"]["providers"][0] == "pubmed"


def test_failures_are_classified_and_total_failure_is_an_error(core):
    with respx.mock:
        respx.get(scholarly.SEMANTIC_SCHOLAR).mock(return_value=httpx.Response(429, headers={"Retry-After": "3"}))
        respx.get(scholarly.CROSSREF).mock(side_effect=httpx.ConnectTimeout("slow"))
        respx.get(scholarly.ARXIV).mock(return_value=httpx.Response(200, content=b"<not xml"))
        respx.get(scholarly.PUBMED_SEARCH).mock(return_value=httpx.Response(200, text="{oops"))
        out = core("literature_search", query="anything", providers=["semantic_scholar", "crossref", "arxiv", "pubmed"])
    kinds = {d["provider"]: d.get("error_kind") for d in out["diagnostics"]["providers"]}
    assert kinds == {"semantic_scholar": "rate_limited", "crossref": "timeout", "arxiv": "result_format",
                     "pubmed": "result_format"}
    assert out["status"] == "error" and out["records"] == []


def test_year_filters_and_limits(core, apis):
    out = core("literature_search", query="x", providers=["crossref", "arxiv"], from_year=2020, to_year=2022,
               total_limit=1)
    assert len(out["records"]) == 1 and out["total"] == 1  # arXiv's 2023 entry is outside the years
    params = apis.routes[2].calls[0].request.url.params
    assert params["filter"] == "from-pub-date:2020,until-pub-date:2022"
    with pytest.raises(BookmarkResearchError, match="per_provider_limit"):
        core("literature_search", query="x", per_provider_limit=201)


def test_search_plan_is_deterministic(core, monkeypatch):
    plan = core("search_plan", query="graph rag", native_search_available=True, native_search_tools=["web_search"],
                include_working_papers=True, from_year=2023)
    assert plan["search_execution_mode"] == "hybrid_search"
    assert {q["provenance"] for q in plan["provider_queries"]} == {"provider:semantic_scholar", "provider:arxiv"}
    assert plan["native_queries"][0] == {"tool": "web_search", "query": "graph rag 2023", "provenance": "native:web_search"}
    assert any("OPENALEX_API_KEY" in line for line in plan["limitations"])
    assert core("search_plan", query="graph rag") == core("search_plan", query="graph rag")
    assert core("search_plan", query="q", offline=True)["search_execution_mode"] == "strategy_only"


def test_cli_literature_exit_code(tmp_path, apis):
    from click.testing import CliRunner

    from bookmark_research.cli.main import cli

    ok = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "d"), "literature", "graph retrieval", "--provider",
                                  "crossref", "--provider", "arxiv", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["status"] == "ok" and apis.routes[2].called  # Crossref really answered
    skipped = run_cli("literature", "graph retrieval", "--provider", "openalex", data_dir=tmp_path / "d")
    assert skipped.returncode == 1 and "Traceback" not in skipped.stderr
    assert skipped.stderr.strip().splitlines()[-1] == "error: no scholarly provider succeeded: openalex: needs OPENALEX_API_KEY"
    usage = run_cli("literature", "graph retrieval", "--mode", "fast", data_dir=tmp_path / "d")
    assert usage.returncode == 2 and "--mode" in usage.stderr
    plan = cli_json("search-plan", "graph rag", "--native-tool", "web_search", data_dir=tmp_path)
    assert plan["search_execution_mode"] == "hybrid_search"


def test_redirects_refused_unicode_encoded_and_keys_kept_out_of_logs(core, monkeypatch, caplog):
    import logging

    monkeypatch.setenv("OPENALEX_API_KEY", CANARY)
    caplog.set_level(logging.DEBUG)
    query = '图神经网络 & "rank" 100%'
    with respx.mock:
        route = respx.get(scholarly.OPENALEX).mock(
            return_value=httpx.Response(302, headers={"Location": "https://evil.example/steal"}))
        evil = respx.get("https://evil.example/steal").mock(return_value=httpx.Response(200, json={}))
        out = core("literature_search", query=query, providers=["openalex"])
    assert out["diagnostics"]["providers"][0]["error_kind"] == "http_error" and not evil.called
    assert route.calls[0].request.url.params["search"] == query  # percent-encoded on the wire, intact
    assert CANARY not in caplog.text and CANARY not in json.dumps(out)


def test_semantic_scholar_pages_past_100(core):
    def page(request):
        offset, limit = int(request.url.params["offset"]), int(request.url.params["limit"])
        rows = [{"paperId": f"p{i}", "title": f"Paper {i}", "year": 2020} for i in range(offset, offset + limit)]
        return httpx.Response(200, json={"total": 500, "offset": offset, "next": offset + limit, "data": rows})

    with respx.mock:
        route = respx.get(scholarly.SEMANTIC_SCHOLAR).mock(side_effect=page)
        out = core("literature_search", query="x", providers=["semantic_scholar"], per_provider_limit=150,
                   total_limit=1000)
    assert out["total"] == 150 and [c.request.url.params["limit"] for c in route.calls] == ["100", "50"]
