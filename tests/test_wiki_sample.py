"""The sample wiki committed under wiki/ is what the demo's session compiles to, and it lints clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from bookmark_research.core.app import App
from bookmark_research.core.registry import run
from bookmark_research.demo_wiki import build_sample
from tests.wiki_support import tree

REPO = Path(__file__).resolve().parent.parent


def test_the_committed_sample_wiki_matches_a_fresh_build_and_lints_clean(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    build_sample(tmp_path / "wiki", data)
    fresh, committed = tree(tmp_path / "wiki"), tree(REPO / "wiki")
    assert fresh == committed, ("wiki/ is out of date: run python scripts/build_sample_wiki.py",
                                sorted(set(fresh.items()) ^ set(committed.items()))[:5])
    assert len([p for p in fresh if p.startswith("pages/")]) == 3
    monkeypatch.setenv("BOOKMARK_RESEARCH_CONFIG", str(data / "settings.json"))
    with App(data) as app:
        lint = run(app, "wiki_lint", {}).model_dump(mode="json")
        assert (lint["status"], lint["issues"], lint["pages_checked"]) == ("ok", [], 3)
        found = run(app, "wiki_search", {"query": "repeated term"}).model_dump(mode="json")
        assert [r["page_id"] for r in found["results"]] == ["full-text-ranking"]
