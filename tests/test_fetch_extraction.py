"""Extraction through fetch_web: metadata in the output and the archive, hostile bodies, provider HTML."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from bookmark_research.config.settings import update
from tests.conftest import cli_json
from tests.site import ARTICLE, Site


@pytest.fixture(autouse=True)
def settings_file(tmp_path, monkeypatch):
    path = tmp_path / "config" / "settings.json"
    monkeypatch.setenv("BOOKMARK_RESEARCH_CONFIG", str(path))
    return path


@pytest.fixture
def site(settings_file):
    update({"direct.allow_private_networks": True, "direct.min_interval_seconds": 0}, terminal=True)
    with Site() as s:
        yield s


def _manifest(core, capture_id):
    return json.loads((core.data_dir / "archive" / "captures" / capture_id / "manifest.json").read_text())


def test_metadata_and_structure_are_returned_and_archived(core, site):
    out = core("fetch_web", urls=[site.base + "/meta-article"], provider="direct")
    page = out["pages"][0]
    assert page["status"] == "ok" and page["title"] == "Fusion notes"
    assert (page["author"], page["published_at"], page["site_name"], page["language"]) == (
        "Ada Quarry", "2026-02-03", "Ranking Weekly", "en-GB")
    assert "\n\n## Why it works\n\n- No score calibration is needed.\n- Outliers in one list cannot dominate." in page[
        "text"]
    assert "| k | effect |\n| --- | --- |\n| 60 | the usual choice |" in page["text"]
    assert "Home | Archive" not in page["text"] and "footer" not in page["text"]
    entry = _manifest(core, page["capture_id"])["pages"][0]
    assert (entry["author"], entry["published_at"], entry["site_name"], entry["language"]) == (
        "Ada Quarry", "2026-02-03", "Ranking Weekly", "en-GB")
    body = (core.data_dir / "archive" / "captures" / page["capture_id"] / entry["body_file"]).read_text()
    assert body == page["text"]
    hits = core("search_archive", query="outliers dominate")
    assert hits["total"] == 1 and hits["results"][0]["sha256"] == entry["sha256"]


def test_hostile_bodies_are_classified_per_page_and_never_fail_the_batch(core, site):
    names = ["binary-html", "odd-charset", "gbk", "article", "huge"]
    out = core("fetch_web", urls=[f"{site.base}/{n}" for n in names], provider="direct")
    pages = {p["url"].rsplit("/", 1)[1]: p for p in out["pages"]}
    assert out["status"] == "partial" and out["attempts"][0]["status"] == "partial"
    assert pages["binary-html"]["status"] == "error" and pages["binary-html"]["error_kind"] == "unsupported_content"
    assert pages["binary-html"]["extraction_status"] == "provider_error"
    assert pages["odd-charset"]["status"] == "ok" and pages["odd-charset"]["title"] == "Rank fusion expliqué"
    assert pages["gbk"]["status"] == "ok" and "倒数排序融合把多个检索系统" in pages["gbk"]["text"]
    assert pages["article"]["status"] == "ok"
    huge = pages["huge"]
    assert huge["status"] == "ok" and huge["possibly_truncated"] is True and huge["characters"] > 10_000
    raw = json.loads((core.data_dir / "archive" / "captures" / out["attempts"][0]["capture_id"]
                      / "response.json").read_text())
    by_url = {r["url"].rsplit("/", 1)[1]: r for r in raw["responses"]}
    assert by_url["binary-html"]["body"] is None  # binary bytes are not archived as text


def test_cli_shows_metadata_in_json(tmp_path, site):
    out = cli_json("fetch-web", site.base + "/meta-article", "--provider", "direct", data_dir=tmp_path / "d")
    assert out["pages"][0]["published_at"] == "2026-02-03" and out["pages"][0]["author"] == "Ada Quarry"


@respx.mock
def test_provider_html_is_extracted_not_stored_raw(core):
    respx.get(url__startswith="https://r.jina.ai/").mock(return_value=httpx.Response(200, json={
        "code": 200, "data": {"url": "https://blog.example/a", "title": "", "content": ARTICLE}}))
    out = core("fetch_web", urls=["https://blog.example/a"], provider="jina")
    page = out["pages"][0]
    assert page["status"] == "ok" and page["extraction_status"] == "extracted"
    assert page["text"].count("Reciprocal rank fusion") == 6
    assert "<article>" not in page["text"] and "Home | Blog" not in page["text"] and "tracking" not in page["text"]
    assert page["title"] == "Rank fusion explained"
