"""research_search refusals and failures (QA B4, B5, papercut 1): bad year ranges cost nothing; a failed
scholarly search says which provider failed and why, on every front end."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from bookmark_research.errors import InvalidArgumentError
from bookmark_research.mcp.server import build_server
from bookmark_research.providers import scholarly
from tests.conftest import cli_json, mcp_call, mcp_payload, run_cli
from tests.research_support import start

QUERY = [{"question_id": "q1", "query": "tokio async runtime"}]


def _usage(core, rid):
    status = core("research_status", research_id=rid)
    return status["usage"], status["counts"]["operations"]


def test_years_out_of_order_are_refused_before_any_budget(core):
    rid = start(core, ["https://example.org/a"])["research_id"]
    before = _usage(core, rid)
    with pytest.raises(InvalidArgumentError, match="to_year: Value error, 2020 is before from_year 2024"):
        core("research_search", research_id=rid, operation_id="x2", kind="scholarly", queries=QUERY,
             from_year=2024, to_year=2020)
    with pytest.raises(InvalidArgumentError, match="from_year: .*kind=scholarly only"):
        core("research_search", research_id=rid, operation_id="x3", queries=QUERY, from_year=2020)
    proc = run_cli("research", "search", rid, "--operation-id", "x2", "--query", "q1=a", "--kind", "scholarly",
                   "--from-year", "2024", "--to-year", "2020", data_dir=core.data_dir)
    assert proc.returncode == 2 and "2020 is before from_year 2024" in proc.stderr
    assert _usage(core, rid) == before == ({"search_calls": 0, "fetch_calls": 0, "rounds": 0}, 0)


@respx.mock
def test_a_failed_scholarly_search_names_each_provider_and_its_reason(core):
    respx.get(scholarly.SEMANTIC_SCHOLAR).mock(side_effect=httpx.ConnectError("refused"))
    respx.get(scholarly.CROSSREF).mock(return_value=httpx.Response(503, json={}))
    rid = start(core, ["https://example.org/a"])["research_id"]
    out = core("research_search", research_id=rid, operation_id="sch1", kind="scholarly", queries=QUERY,
               providers=["semantic_scholar", "crossref"])
    assert out["status"] == "error" and out["sources"] == []
    assert out["error"].startswith("no scholarly provider succeeded: ")
    assert "semantic_scholar: " in out["error"] and "crossref: " in out["error"] and out["error_kind"]
    target = out["result"]["targets"][0]
    assert {e["provider"] for e in target["errors"]} == {"semantic_scholar", "crossref"}
    assert "research_source" not in out["next_action"] and "new operation_id" in out["next_action"]
    result = mcp_call(build_server(core.app), [("research_search", {
        "research_id": rid, "operation_id": "sch2", "kind": "scholarly", "queries": QUERY,
        "providers": ["semantic_scholar"]})])[0]
    payload = mcp_payload(result)
    assert result.is_error and payload["error"].startswith("no scholarly provider succeeded: semantic_scholar: ")
    assert payload["error_kind"] and result.structured_content["error"] == payload["error"]


def test_a_failed_search_prints_its_error_once(core):
    rid = start(core, ["https://example.org/a"])["research_id"]
    proc = run_cli("research", "search", rid, "--operation-id", "s1", "--query", "q1=tokio runtime tutorial",
                   "--provider", "jina", data_dir=core.data_dir)  # jina needs a key: a classified failure
    assert proc.returncode == 1
    assert "error:" not in proc.stdout and proc.stderr.count("error: ") == 1 and "JINA_API_KEY" in proc.stderr
    replay = cli_json("research", "search", rid, "--operation-id", "s1", "--query", "q1=tokio runtime tutorial",
                      "--provider", "jina", data_dir=core.data_dir, expect=1)
    assert replay["replayed"] is True and json.dumps(replay).count("JINA_API_KEY") >= 1


def test_refusals_speak_in_field_names_not_pydantic_internals(core):
    """Papercut 17: no union member tags or regular expressions in the one-line refusal."""
    rid = start(core, ["https://example.org/a"])["research_id"]
    wrong = run_cli("research", "search", rid, "--operation-id", "p1", "--query", "q1=a", "--provider", "direct",
                    data_dir=core.data_dir)
    assert wrong.returncode == 2 and wrong.stderr.strip() == (
        "error: research_search: providers[0]: Input should be 'exa', 'parallel', 'tavily', 'jina', 'openalex', "
        "'semantic_scholar', 'crossref', 'pubmed' or 'arxiv'")
    with pytest.raises(InvalidArgumentError, match=r"^research_search: queries\[0\]\.query: must not be blank$"):
        core("research_search", research_id=rid, operation_id="p2", queries=[{"question_id": "q1", "query": "   "}])
