"""Every query of the benchmark mix, on generated 10k packages, against a brute-force scan of the JSON.

A faster search path must not change answers: totals, unique-URL counts and the set of matched
bookmarks must equal a literal, case-insensitive substring scan of the package files (title, URL,
note, tag text, folder path), pages must tile the result without gaps or repeats, and tree order
must be the canvas document order.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from bookmark_research.core.app import App
from bookmark_research.core.registry import run
from tests.bruteforce import brute_force, scan_package

BENCH = Path(__file__).resolve().parents[1] / "scripts" / "bench"
sys.path.insert(0, str(BENCH))

from generate import generate  # noqa: E402
from queries import MIX  # noqa: E402

SIZE = 10_000


def _search(app: App, **arguments: Any) -> dict[str, Any]:
    return run(app, "search_bookmarks", {"source_id": "mix", **arguments}).model_dump(mode="json")


def _all_pages(app: App, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """Every row of the top-level result, paging 1000 at a time through ``next_offset``."""
    rows: list[dict[str, Any]] = []
    offset = 0
    while True:
        out = _search(app, **{**arguments, "limit": 1000, "offset": offset, "count_only": False})
        rows.extend(out["results"])
        if out["next_offset"] is None:
            return rows
        assert out["next_offset"] == offset + len(out["results"]) == len(rows)
        offset = out["next_offset"]


@pytest.fixture(scope="module", params=sorted(MIX))
def generated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    lang = request.param
    base = tmp_path_factory.mktemp(f"mix-{lang}")
    package = generate(base / "package", SIZE, lang)
    app = App(base / "data")
    run(app, "sync_package", {"package_path": str(package), "source_id": "mix"})
    yield lang, app, scan_package(package)
    app.close()


def test_generated_package_is_what_the_mix_expects(generated):
    lang, _, rows = generated
    bookmarks = [r for r in rows if r.is_bookmark]
    assert len(bookmarks) == SIZE
    for name, arguments in MIX[lang]:
        if name in ("common", "common 2"):  # common words match more than 5% of the rows
            assert len(brute_force(rows, arguments)[1]) > SIZE // 20, name
        if name in ("rare", "rare 2"):
            assert 0 < len(brute_force(rows, arguments)[1]) < SIZE // 200, name


@pytest.mark.parametrize("index", range(20))
def test_mix_query_equals_brute_force(generated, index):
    lang, app, rows = generated
    name, arguments = MIX[lang][index]
    by_key = {(r.section_id, r.item_id): r for r in rows}
    per_target, union = brute_force(rows, arguments)
    out = _search(app, **arguments)
    assert out["total"] == len(union), name
    assert out["unique_urls"] == len({by_key[k].url for k in union}), name
    assert [t["total"] for t in out["targets"]] == [len(s) for s in per_target], name
    if arguments.get("count_only"):
        assert out["results"] == [] and out["next_offset"] is None
        return
    full = _all_pages(app, arguments)
    keys = [(r["section_id"], r["item_id"]) for r in full]
    assert len(keys) == len(set(keys)) == len(union) and set(keys) == union, name
    offset = arguments.get("offset", 0)
    assert [(r["section_id"], r["item_id"]) for r in out["results"]] == keys[offset:offset + 20], name
    if arguments.get("order") == "tree":
        assert keys == sorted(keys, key=lambda k: (k[0], by_key[k].preorder)), name
    else:
        scores = [r["score"] or 0.0 for r in full]
        assert scores == sorted(scores, reverse=True), name
    for row in out["results"]:  # every row shows where a term matched
        snippet = row["snippet"]
        assert snippet and "[" in snippet["text"], (name, row["item_id"])
