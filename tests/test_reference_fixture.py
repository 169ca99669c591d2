"""The reference implementation's own package must import exactly (scenarios 1 and 2)."""

from __future__ import annotations

import hashlib

import pytest

from tests.packages import REFERENCE, copy_fixture

pytestmark = pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/fixtures/reference-canvas is not present")


def _digest(root):
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_counts(core, tmp_path):
    pkg = copy_fixture("reference", tmp_path / "ref")
    out = core.sync(pkg, source_id="ref")
    assert out["warnings"] == []
    c = core.status("ref")["counts"]
    assert (c["bookmarks"], c["unique_urls"], c["folders"], c["tree_roots"], c["user_folders"]) == (7, 6, 3, 1, 2)
    assert (c["sections"], c["nodes"], c["edges"], c["memberships"]) == (4, 6, 2, 2)


def test_queries_and_no_writes_to_the_package(core, tmp_path):
    pkg = copy_fixture("reference", tmp_path / "ref")
    before = _digest(pkg)
    core.sync(pkg, source_id="ref")
    hit = core.search("ref", "https://docs.example.test/search")
    assert hit["total"] == 2 and hit["unique_urls"] == 1
    assert {r["section_id"] for r in hit["results"]} == {"permanent-section", "research-card"}
    assert core.total("ref", section="B") == 3
    assert core.total("ref", group_id="investigation-group") == 4
    assert core.total("ref", group_id="Investigation") == 4
    assert core.total("ref", folder_id="research-folder") == 3
    assert _digest(pkg) == before
    again = core.sync(pkg, source_id="ref")
    assert again["changed_files"] == 0 and again["skipped_files"] == 5


def test_context_counts_anchor_once(core, tmp_path):
    core.sync(copy_fixture("reference", tmp_path / "ref"), source_id="ref")
    ctx = core.context("ref")
    assert ctx["counts"]["instances"] == 7 and ctx["counts"]["unique_urls"] == 6
    naive = sum(s["bookmark_count"] for s in ctx["sections"])
    assert naive == 10
    anchor = next(s for s in ctx["sections"] if s["is_anchor"])
    assert anchor["anchor_of"] == "permanent-section" and anchor["counted_in_totals"] is False
    assert {e["direction"] for e in ctx["edges"]} == {"forward"}
    note = core.search("ref", "never send")["results"][0]
    assert note["note_color"] == "orange" and note["item_id"] == "search-doc"
