"""The evidence archive: atomic, content-addressed captures; BM25 search; bookmarks found by page text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bookmark_research.errors import BookmarkResearchError
from bookmark_research.evidence.archive import PageCapture, save
from bookmark_research.providers.urls import canonical_url
from tests.conftest import cli_json
from tests.packages import FIXTURES

RUST = ("Tokio is an asynchronous runtime for the Rust programming language. It provides the building blocks "
        "needed for writing network applications: a multi-threaded scheduler, timers and async I/O.")
SQL = "SQLite FTS5 supports the bm25 ranking function and a trigram tokenizer for substring queries."
CJK = "知识图谱与检索增强生成：推理加速是部署大模型的关键。"


def _save(core, url: str, text: str, provider: str = "direct", title: str | None = None) -> dict:
    return save(core.app, provider=provider, tool="fetch", request={"urls": [url]},
                response={"url": url, "body": text}, retrieved_at="2026-11-30T10:00:00Z",
                pages=[PageCapture(requested_url=url, returned_url=url, title=title or url, text=text)])


def test_capture_layout_and_dedupe(core):
    first = _save(core, "https://tokio.rs/tokio/tutorial", RUST)
    second = _save(core, "https://mirror.example/tokio", RUST)
    assert first["capture_id"] != second["capture_id"]
    manifest = json.loads(Path(first["manifest_path"]).read_text())
    assert manifest["provider"] == "direct" and manifest["pages"][0]["characters"] == len(RUST)
    body = Path(first["pages"][0]["body_path"])
    assert body.read_text() == RUST and body.name == f"{manifest['pages'][0]['sha256']}.txt"
    assert len(list((core.data_dir / "archive" / "pages").iterdir())) == 1  # one body for two captures
    out = core("search_archive", query="asynchronous runtime")
    assert out["total"] == 1 and len(out["results"][0]["occurrences"]) == 2
    assert "[asynchronous] [runtime]" in out["results"][0]["snippet"]


def test_ranking_url_filter_cjk_and_paging(core):
    _save(core, "https://tokio.rs/tokio/tutorial", RUST)
    _save(core, "https://www.sqlite.org/fts5.html", SQL)
    _save(core, "https://example.cn/kg-rag", CJK)
    assert [r["occurrences"][0]["url"] for r in core("search_archive", query="bm25")["results"]] == [
        "https://www.sqlite.org/fts5.html"]
    assert core("search_archive", query="推理")["total"] == 1  # two CJK characters
    assert core("search_archive", query="图")["total"] == 1
    assert core("search_archive", query="the", url="tokio.rs")["total"] == 1
    page = core("search_archive", query="the", limit=1)
    assert page["total"] == 2 and page["next_offset"] == 1
    assert core("search_archive", query="nowhere-to-be-found")["total"] == 0


def test_search_archive_without_any_archive(core):
    assert core("search_archive", query="anything")["total"] == 0
    assert not core.data_dir.exists()
    with pytest.raises(BookmarkResearchError, match="query"):
        core("search_archive", query=" ")
    with pytest.raises(BookmarkResearchError, match="limit"):
        core("search_archive", query="x", limit=51)


def test_bookmarks_found_by_page_text(core):
    core.sync(FIXTURES / "sample-en", source_id="en", mode="snapshot")
    _save(core, "https://tokio.rs/tokio/tutorial", RUST)
    _save(core, "https://www.sqlite.org/fts5.html", SQL)
    found = core.search("en", "multi-threaded scheduler", content=True)
    assert found["total"] == 3  # the Tokio tutorial is bookmarked three times
    assert {r["url"] for r in found["results"]} == {"https://tokio.rs/tokio/tutorial"}
    assert found["results"][0]["snippet"]["field"] == "page"
    assert found["searched_fields"] == ["archived_page_text"]
    assert core.total("en", "multi-threaded scheduler") == 0  # not in any bookmark field
    assert core.search("en", "trigram tokenizer", content=True, section="A")["total"] == 1


def test_canonical_url_rules():
    assert canonical_url("HTTPS://Example.COM:443/doc?x#a") == canonical_url("https://example.com/doc?x#b")
    assert canonical_url("https://example.com") == "https://example.com/"
    assert canonical_url("https://e.com/a?b=1&a=2") != canonical_url("https://e.com/a?a=2&b=1")
    assert canonical_url("http://e.com/") != canonical_url("https://e.com/")
    assert canonical_url("https://e.com/#/one") != canonical_url("https://e.com/#/two")
    assert canonical_url("https://e.com/p?") == "https://e.com/p?"
    assert canonical_url("https://user:pw@e.com/") is None and canonical_url("ftp://e.com/") is None


def test_cli_search_archive(tmp_path):
    from tests.conftest import Core

    core = Core(tmp_path / "data")
    _save(core, "https://www.sqlite.org/fts5.html", SQL)
    core.app.close()
    out = cli_json("search-archive", "trigram", data_dir=tmp_path / "data")
    assert out["total"] == 1 and out["results"][0]["occurrences"][0]["provider"] == "direct"
