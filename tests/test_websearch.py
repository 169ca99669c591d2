"""search_web and remote-MCP fetching against loopback MCP servers built with the SDK; Jina search via respx."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

import bookmark_research.providers.remote_mcp as remote_mcp
import bookmark_research.providers.websearch as websearch
from bookmark_research.config.settings import update
from bookmark_research.mcp.server import build_server
from tests.conftest import cli_json, mcp_call, run_cli
from tests.remote_providers import SEEN

CANARY = "exa-canary-key-9d2f41"


@pytest.fixture
def servers(stand_in_providers):
    return stand_in_providers


@pytest.fixture
def remote(servers, monkeypatch):
    endpoints = {**servers.endpoints, "parallel": "http://127.0.0.1:9/mcp"}  # parallel down unless a test says so
    monkeypatch.setattr(remote_mcp, "ENDPOINTS", endpoints)
    monkeypatch.setattr(websearch, "_cooldowns", {})
    SEEN.clear()
    return servers


def test_rrf_fusion_over_primaries_with_failures_reported(core, remote):
    update({"search.providers": ["exa", "tavily", "parallel"], "search.fallback_providers": []},
           terminal=True)
    out = core("search_web", targets=[{"target": "rrf", "query": "rank fusion"}], limit_per_target=3)
    target = out["targets"][0]
    assert target["status"] == "partial" and target["providers"] == ["exa", "tavily"]
    shared = next(h for h in target["results"] if h["canonical_url"] == "https://shared.example/page")
    assert shared["provider_count"] == 2 and {h["provider"] for h in shared["sources"]} == {"exa", "tavily"}
    assert target["results"][0]["canonical_url"] == "https://shared.example/page"  # found by both: ranked first
    assert [h["rrf_score"] for h in target["results"]] == sorted((h["rrf_score"] for h in target["results"]),
                                                                 reverse=True)
    parallel = next(b for b in out["batches"] if b["provider"] == "parallel")
    assert parallel["status"] == "error" and parallel["error_kind"] == "connection_error" and parallel["results"] == []
    assert out["successful_provider_count"] == 2
    assert SEEN["exa"][0] == {"tool": "web_search_exa", "query": "rank fusion", "numResults": 3}


def test_fallback_only_for_unresolved_queries(core, remote):
    update({"search.providers": ["exa"], "search.fallback_providers": ["tavily"]}, terminal=True)
    out = core("search_web", targets=[{"target": "ok", "query": "works"}, {"target": "bad", "query": "boom"}])
    assert out["routing"]["fallback_triggered"] is True
    assert [q["query"] for q in SEEN["tavily"]] == ["boom"]  # the resolved query did not fall back
    assert {t["target"]: t["status"] for t in out["targets"]} == {"ok": "ok", "bad": "partial"}


def test_quota_cooldown_and_total_failure(core, remote, tmp_path):
    update({"search.providers": ["tavily"], "search.fallback_providers": []}, terminal=True)
    first = core("search_web", targets=[{"target": "q", "query": "quota please"}])
    batch = first["batches"][0]
    assert batch["error_kind"] == "quota_exhausted" and batch["retry_after_seconds"] == 30
    again = core("search_web", targets=[{"target": "q", "query": "anything"}])
    assert again["batches"][0].get("skipped_due_to_cooldown") is True and len(SEEN["tavily"]) == 1
    (result,) = mcp_call(build_server(core.app), [("search_web", {"targets": [{"target": "q", "query": "x"}]})])
    assert result.is_error and result.structured_content["successful_provider_count"] == 0


def test_jina_search_needs_a_key_and_is_skipped_without(core):
    update({"search.providers": ["jina"], "search.fallback_providers": []}, terminal=True)
    out = core("search_web", targets=[{"target": "t", "query": "q"}])
    assert out["batches"][0]["error_kind"] == "authentication_required"
    assert out["successful_provider_count"] == 0 and out["targets"][0]["results"] == []


@respx.mock
def test_jina_search_with_key(core, monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", CANARY)
    route = respx.get("https://s.jina.ai/").mock(return_value=httpx.Response(200, json={"data": [
        {"title": "A", "url": "https://a.example/", "description": "first"},
        {"title": "Bad", "url": "javascript:alert(1)"}]}))
    out = core("search_web", targets=[{"target": "t", "query": "q w"}], providers=["jina"])
    assert [h["url"] for h in out["targets"][0]["results"]] == ["https://a.example/"]
    request = route.calls[0].request
    assert request.url.params["q"] == "q w" and request.headers["authorization"] == f"Bearer {CANARY}"
    assert CANARY not in json.dumps(out)


def test_remote_fetch_waterfall_and_secrets(core, remote, monkeypatch):
    monkeypatch.setenv("EXA_API_KEY", CANARY)
    update({"fetch.providers": ["exa", "parallel"]}, terminal=True)
    out = core("fetch_web", urls=["https://a.example/doc", "https://a.example/missing"], max_characters=5000)
    pages = {p["url"]: p for p in out["pages"]}
    assert pages["https://a.example/doc"]["provider"] == "exa" and pages["https://a.example/doc"]["status"] == "ok"
    assert pages["https://a.example/missing"]["status"] != "ok"
    parallel = next(a for a in out["attempts"] if a["provider"] == "parallel")
    assert parallel["urls"] == ["https://a.example/missing"] and parallel["error_kind"] == "connection_error"
    archived = "".join(p.read_text() for p in (core.data_dir / "archive").rglob("*.json"))
    assert "web_fetch_exa" in archived and CANARY not in archived + json.dumps(out)


def test_cli_search_web_and_providers(tmp_path, remote):
    env = {"BOOKMARK_RESEARCH_CONFIG": str(tmp_path / "cfg.json")}
    proc = run_cli("search-web", "--target", "rank fusion", "--provider", "jina", env=env, data_dir=tmp_path)
    assert proc.returncode == 1 and "JINA_API_KEY" in proc.stderr and "Traceback" not in proc.stderr
    listed = cli_json("providers", data_dir=tmp_path, env={**env, "EXA_API_KEY": CANARY})
    exa = next(p for p in listed["providers"] if p["provider"] == "exa")
    assert exa["credential_state"] == {"configured": True, "source": "environment"}
    assert CANARY not in json.dumps(listed)


def test_probe_lists_remote_tools(core, remote):
    out = core("search_providers", probe=True)
    by_name = {p["provider"]: p for p in out["providers"]}
    assert by_name["exa"]["availability"] == "reachable"
    assert by_name["exa"]["probe"]["capabilities"]["search"] == {"status": "supported", "tool": "web_search_exa"}
    assert by_name["tavily"]["probe"]["capabilities"]["fetch"] == {"status": "unsupported"}
    assert by_name["parallel"]["availability"] == "failed" and by_name["parallel"]["probe"]["error_kind"] == "connection_error"
    assert by_name["jina"]["availability"] == "not_probed"
    assert SEEN == {}  # listing tools calls none of them


def test_out_of_order_completion_keeps_provider_order(core, remote, monkeypatch):
    import time as _time

    real = remote_mcp.RemoteMCP.search

    def slow_exa(self, query, limit):
        if self.name == "exa":
            _time.sleep(0.4)
        return real(self, query, limit)

    monkeypatch.setattr(remote_mcp.RemoteMCP, "search", slow_exa)
    update({"search.providers": ["exa", "tavily"], "search.fallback_providers": []}, terminal=True)
    out = core("search_web", targets=[{"target": "a", "query": "one"}, {"target": "b", "query": "two"}])
    assert [(b["provider"], b["target"]) for b in out["batches"]] == [("exa", "a"), ("exa", "b"), ("tavily", "a"),
                                                                       ("tavily", "b")]


def test_parallel_argument_mapping_and_excerpts_are_not_pages(core, remote, monkeypatch):
    monkeypatch.setitem(remote_mcp.ENDPOINTS, "parallel", remote.endpoints["parallel"])
    found = core("search_web", targets=[{"target": "p", "query": "rank fusion"}], providers=["parallel"])
    assert found["targets"][0]["results"][0]["url"] == "https://parallel.example/a"
    assert SEEN["parallel"][0] == {"tool": "web_search", "objective": "rank fusion", "search_queries": ["rank fusion"]}
    fetched = core("fetch_web", urls=["https://parallel.example/a"], provider="parallel")
    assert SEEN["parallel"][1] == {"tool": "web_fetch", "urls": ["https://parallel.example/a"], "full_content": True}
    page = fetched["pages"][0]
    assert page["content_kind"] == "provider_excerpts" and page["status"] != "ok"  # excerpts trigger the fallback


def test_auth_placement_per_provider(monkeypatch):
    from bookmark_research.config.settings import Settings

    assert remote_mcp.RemoteMCP("tavily", Settings()).headers["X-Tavily-Access-Mode"] == "keyless"
    assert "x-api-key" not in remote_mcp.RemoteMCP("exa", Settings()).headers  # anonymous
    monkeypatch.setenv("EXA_API_KEY", "k1")
    monkeypatch.setenv("PARALLEL_API_KEY", "k2")
    monkeypatch.setenv("TAVILY_API_KEY", "k3")
    assert remote_mcp.RemoteMCP("exa", Settings()).headers["x-api-key"] == "k1"
    assert remote_mcp.RemoteMCP("parallel", Settings()).headers["Authorization"] == "Bearer k2"
    tavily = remote_mcp.RemoteMCP("tavily", Settings()).headers
    assert tavily["Authorization"] == "Bearer k3" and "X-Tavily-Access-Mode" not in tavily


def test_one_session_per_provider_for_many_queries(core, remote, monkeypatch):
    opened = []
    real = remote_mcp.RemoteMCP._open

    def counting(self):
        opened.append(self.name)
        return real(self)

    monkeypatch.setattr(remote_mcp.RemoteMCP, "_open", counting)
    update({"search.providers": ["exa"], "search.fallback_providers": []}, terminal=True)
    out = core("search_web", targets=[{"target": str(n), "query": f"query {n}"} for n in range(4)])
    assert out["successful_provider_count"] == 1 and len(SEEN["exa"]) == 4
    assert opened == ["exa"]  # one handshake for four queries
