"""fetch_web: the direct fetcher against a loopback site, Jina mocked with respx, the waterfall, secrets."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from bookmark_research.config.settings import update
from bookmark_research.errors import BookmarkResearchError
from bookmark_research.providers.extract import extract_html
from tests.conftest import cli_json, run_cli
from tests.site import ARTICLE, CHALLENGE, LOGIN, NOT_FOUND, Site

CANARY = "jina-canary-key-5c1e8b"


@pytest.fixture(autouse=True)
def settings_file(tmp_path, monkeypatch):
    path = tmp_path / "config" / "settings.json"
    monkeypatch.setenv("BOOKMARK_RESEARCH_CONFIG", str(path))
    monkeypatch.delenv("JINA_API_KEY", raising=False)
    return path


@pytest.fixture
def site(settings_file):
    update({"direct.allow_private_networks": True, "direct.min_interval_seconds": 0}, terminal=True)
    with Site() as s:
        yield s


def _direct(core, *urls, **kw):
    return core("fetch_web", urls=list(urls), provider="direct", **kw)


def test_article_is_extracted_and_archived(core, site):
    out = _direct(core, site.base + "/article")
    page = out["pages"][0]
    assert out["status"] == "ok" and page["status"] == "ok" and page["provider"] == "direct"
    assert page["title"] == "Rank fusion explained" and "Reciprocal rank fusion" in page["text"]
    assert "Site header" not in page["text"] and "tracking" not in page["text"]
    manifest = json.loads((core.data_dir / "archive" / "captures" / page["capture_id"] / "manifest.json").read_text())
    assert manifest["provider"] == "direct" and manifest["pages"][0]["sha256"] == page["sha256"]
    raw = json.loads((core.data_dir / "archive" / "captures" / page["capture_id"] / "response.json").read_text())
    assert "<nav>" in raw["responses"][0]["body"]  # the raw HTML is kept
    assert core("search_archive", query="score calibration")["total"] == 1


@pytest.mark.parametrize("path,status", [("/login", "login_required"), ("/missing", "not_found"),
                                         ("/challenge", "access_challenge")])
def test_shells_are_not_content(core, site, path, status):
    page = _direct(core, site.base + path)["pages"][0]
    assert page["extraction_status"] == status and page["status"] != "ok"


def test_redirects_robots_types_and_size(core, site):
    out = _direct(core, site.base + "/redirect", site.base + "/away", site.base + "/private/secret",
                  site.base + "/file.pdf", site.base + "/plain", site.base + "/loop")
    by_url = {p["url"].rsplit("/", 1)[-1]: p for p in out["pages"]}
    assert by_url["redirect"]["status"] == "ok" and by_url["redirect"]["returned_url"].endswith("/article")
    assert by_url["away"]["error_kind"] == "cross_site_redirect"
    assert by_url["secret"]["error_kind"] == "robots_disallowed" and "/private/secret" not in site.hits
    assert by_url["file.pdf"]["error_kind"] == "unsupported_content"
    assert by_url["plain"]["status"] == "ok"
    assert by_url["loop"]["error_kind"] == "too_many_redirects"
    assert out["status"] == "partial"
    update({"direct.max_bytes": 65536}, terminal=True)
    assert _direct(core, site.base + "/big")["pages"][0]["error_kind"] == "response_too_large"


def test_private_networks_refused_by_default(core, settings_file):
    with Site() as s:
        for url in (s.base + "/article", s.base.replace("127.0.0.1", "localhost") + "/article"):
            out = _direct(core, url)
            assert out["status"] == "error" and out["pages"][0]["error_kind"] == "private_address"
        assert s.hits == []  # nothing was sent, not even robots.txt


def test_invalid_urls_are_rejected(core):
    for bad in ("ftp://example.com/x", "https://user:pw@example.com/", "https://exa mple.com/", "not a url"):
        with pytest.raises(BookmarkResearchError, match="urls"):
            core("fetch_web", urls=[bad])
    with pytest.raises(BookmarkResearchError, match="urls"):
        core("fetch_web", urls=[f"https://e.com/{i}" for i in range(9)])


JINA_OK = {"code": 200, "status": 20000, "data": {"title": "Jina page", "url": "https://jina.example/a",
                                                  "content": "Reader text about rank fusion. " * 20}}


@respx.mock
def test_jina_reader_request_shape_and_waterfall(core, site, monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", CANARY)
    reader = respx.get(url__startswith="https://r.jina.ai/").mock(side_effect=lambda request: (
        httpx.Response(200, json=JINA_OK) if request.url.path.endswith("/a") else httpx.Response(
            451, text=f"blocked {CANARY}")))
    respx.route(host="127.0.0.1").pass_through()
    update({"fetch.providers": ["jina", "direct"]}, terminal=True)
    out = core("fetch_web", urls=["https://jina.example/a", site.base + "/article"])
    assert out["mode"] == "waterfall" and out["status"] == "ok"
    assert [p["provider"] for p in out["pages"]] == ["jina", "direct"]  # direct only for what jina missed
    first = reader.calls[0].request
    assert first.headers["authorization"] == f"Bearer {CANARY}" and first.headers["accept"] == "application/json"
    assert str(first.url) == "https://r.jina.ai/https://jina.example/a"
    assert [a["provider"] for a in out["attempts"]] == ["jina", "direct"]
    assert out["attempts"][1]["urls"] == [site.base + "/article"]
    everything = json.dumps(out) + "".join(p.read_text() for p in (core.data_dir / "archive").rglob("*") if p.is_file())
    assert CANARY not in everything


@respx.mock
@pytest.mark.parametrize("status,kind,retryable", [(401, "authentication_required", False),
                                                   (402, "quota_exhausted", False), (429, "rate_limited", True),
                                                   (503, "transient_http", True), (418, "http_error", False)])
def test_jina_failures_are_classified(core, monkeypatch, status, kind, retryable):
    monkeypatch.setenv("JINA_API_KEY", CANARY)
    respx.get(url__startswith="https://r.jina.ai/").mock(return_value=httpx.Response(
        status, text=f"upstream says {CANARY}", headers={"Retry-After": "7"}))
    out = core("fetch_web", urls=["https://example.com/x"], provider="jina")
    page = out["pages"][0]
    assert out["status"] == "error" and page["error_kind"] == kind and page["error"] == f"jina HTTP {status}"
    assert CANARY not in json.dumps(out)


@respx.mock
def test_jina_timeout_bad_json_and_redirect(core):
    respx.get("https://r.jina.ai/https://example.com/t").mock(side_effect=httpx.ReadTimeout("slow"))
    respx.get("https://r.jina.ai/https://example.com/j").mock(return_value=httpx.Response(200, text="<html>"))
    respx.get("https://r.jina.ai/https://example.com/r").mock(
        return_value=httpx.Response(302, headers={"Location": "https://evil.example/"}))
    out = core("fetch_web", urls=["https://example.com/t", "https://example.com/j", "https://example.com/r"],
               provider="jina")
    assert [p["error_kind"] for p in out["pages"]] == ["timeout", "result_format", "http_error"]


def test_unreachable_provider_is_a_failure_not_an_empty_result(core):
    out = core("fetch_web", urls=["https://example.com/"], provider="exa")  # conftest points exa at a closed port
    assert out["status"] == "error" and out["attempts"][0]["error_kind"] == "connection_error"
    assert out["pages"][0]["status"] == "error" and out["pages"][0]["error_kind"] == "connection_error"


def test_later_failure_never_erases_text(core, site):
    update({"fetch.providers": ["direct", "jina"]}, terminal=True)
    with respx.mock:
        respx.route(host="127.0.0.1").pass_through()
        jina = respx.get(url__startswith="https://r.jina.ai/").mock(return_value=httpx.Response(500))
        out = core("fetch_web", urls=[site.base + "/article", site.base + "/login"])
    assert out["pages"][0]["provider"] == "direct" and out["pages"][0]["status"] == "ok"
    assert out["pages"][1]["extraction_status"] == "login_required"  # jina's 500 did not replace it
    assert [c.request.url.path for c in jina.calls] == [f"/{site.base}/login"]


def test_cli_fetch_web_exit_codes(tmp_path, site, settings_file):
    env = {"BOOKMARK_RESEARCH_CONFIG": str(settings_file)}
    ok = cli_json("fetch-web", site.base + "/article", "--provider", "direct", data_dir=tmp_path / "d", env=env)
    assert ok["status"] == "ok"
    bad = run_cli("fetch-web", site.base + "/missing", "--provider", "direct", "--no-archive",
                  data_dir=tmp_path / "d", env=env)
    assert bad.returncode == 1 and "error: no page could be read" in bad.stderr and "Traceback" not in bad.stderr


def test_extraction_unit_cases():
    assert extract_html(ARTICLE).status == "extracted"
    assert extract_html(LOGIN).status == "login_required"
    assert extract_html(NOT_FOUND, 404).status == "not_found"
    assert extract_html(CHALLENGE).status == "access_challenge"
    assert extract_html("<html><body></body></html>").status == "no_extract"


def test_politeness_interval_between_requests_to_one_host(core, site):
    import time

    update({"direct.min_interval_seconds": 0.3, "direct.respect_robots": False}, terminal=True)
    start = time.monotonic()
    out = _direct(core, site.base + "/article", site.base + "/plain")
    assert out["status"] == "ok" and time.monotonic() - start >= 0.3


class _Endless:
    """A streamed body of ``total`` bytes that counts how much of it was actually pulled."""

    def __init__(self, total: int = 64 * 1024 * 1024, chunk: int = 64 * 1024) -> None:
        self.total, self.chunk, self.pulled = total, chunk, 0

    def __iter__(self):
        while self.pulled < self.total:
            self.pulled += self.chunk
            yield b" " * self.chunk


def test_every_body_is_capped_while_it_streams(core, monkeypatch):
    """Jina search, Jina Reader, robots.txt and scholarly APIs stop reading at the cap (4 MiB / 512 KiB)."""
    from bookmark_research.config.settings import DirectSettings
    from bookmark_research.providers import scholarly
    from bookmark_research.providers.direct import DirectFetcher

    monkeypatch.setenv("JINA_API_KEY", CANARY)
    bodies: dict[str, _Endless] = {}

    def endless(name):
        def respond(request):
            bodies[name] = _Endless()
            return httpx.Response(200, content=iter(bodies[name]), headers={"content-type": "application/json"})
        return respond

    with respx.mock:
        respx.get("https://s.jina.ai/").mock(side_effect=endless("search"))
        respx.get(url__startswith="https://r.jina.ai/").mock(side_effect=endless("reader"))
        respx.get(scholarly.CROSSREF).mock(side_effect=endless("crossref"))
        searched = core("search_web", targets=[{"target": "t", "query": "q"}], providers=["jina"])
        read = core("fetch_web", urls=["https://example.com/a"], provider="jina")
        papers = core("literature_search", query="x", providers=["crossref"])
    assert searched["batches"][0]["error_kind"] == "response_too_large"
    assert read["pages"][0]["error_kind"] == "response_too_large"
    assert papers["diagnostics"]["providers"][0]["error_kind"] == "response_too_large"
    for name, body in bodies.items():
        assert body.pulled <= 4 * 1024 * 1024 + body.chunk, name  # never read past the cap

    robots = _Endless()

    def site(request):
        if request.url.path == "/robots.txt":
            return httpx.Response(200, content=iter(robots))
        return httpx.Response(200, text=ARTICLE, headers={"content-type": "text/html"})

    fetcher = DirectFetcher(DirectSettings(min_interval_seconds=0), transport=httpx.MockTransport(site))
    try:
        page = fetcher.fetch(["https://example.org/article"], 5000).pages[0]
    finally:
        fetcher.close()
    assert page.extraction_status == "extracted"  # an unreadable robots.txt disallows nothing
    assert robots.pulled <= 512 * 1024 + robots.chunk


def test_declared_oversize_fails_before_reading(core, monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", CANARY)
    with respx.mock:
        respx.get("https://s.jina.ai/").mock(return_value=httpx.Response(
            200, content=b"{}", headers={"content-length": str(64 * 1024 * 1024)}))
        out = core("search_web", targets=[{"target": "t", "query": "q"}], providers=["jina"])
    assert out["batches"][0]["error_kind"] == "response_too_large"
    assert out["batches"][0]["error"] == "jina: response larger than 4 MiB"


def test_remote_mcp_tool_results_are_capped(core, stand_in_providers, monkeypatch):
    import bookmark_research.providers.remote_mcp as remote_mcp

    monkeypatch.setattr(remote_mcp, "ENDPOINTS", stand_in_providers.endpoints)
    out = core("fetch_web", urls=["https://example.com/huge"], provider="exa")
    attempt = out["attempts"][0]
    assert out["status"] == "error" and attempt["error_kind"] == "response_too_large", attempt
    assert attempt["error"] == "exa: response larger than 4 MiB"
    fine = core("fetch_web", urls=["https://example.com/fine"], provider="exa")
    assert fine["status"] == "ok"  # the cap is per response, not per session


def test_a_trickling_body_is_bounded_in_time(core, monkeypatch):
    import time

    monkeypatch.setenv("JINA_API_KEY", CANARY)
    update({"timeout_seconds": 0.5}, terminal=True)

    def trickle():
        for _ in range(100):
            time.sleep(0.1)
            yield b" "

    with respx.mock:
        respx.get(url__startswith="https://r.jina.ai/").mock(side_effect=lambda request: httpx.Response(
            200, content=trickle()))
        start = time.monotonic()
        out = core("fetch_web", urls=["https://example.com/slow"], provider="jina")
    assert out["pages"][0]["error_kind"] == "timeout" and time.monotonic() - start < 3
