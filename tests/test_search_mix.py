"""Every query of the benchmark mix, on generated 10k packages, against a brute-force scan of the JSON.

A faster search path must not change answers: totals, unique-URL counts and the set of matched
bookmarks must equal a literal, case-insensitive substring scan of the package files (title, URL,
note, tag text, folder path), pages must tile the result without gaps or repeats, and tree order
must be the canvas document order.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bookmark_research.core.app import App
from bookmark_research.core.registry import run

BENCH = Path(__file__).resolve().parents[1] / "scripts" / "bench"
sys.path.insert(0, str(BENCH))

from generate import generate  # noqa: E402
from queries import MIX  # noqa: E402

SIZE = 10_000


@dataclass
class Row:
    section_id: str
    label: str
    item_id: str
    preorder: int
    is_bookmark: bool
    url: str
    texts: list[str]  # folded title, url, note, tag texts, folder path
    tags: set[str]
    ancestors: set[str] = field(default_factory=set)


def _walk(nodes: list[dict[str, Any]], section_id: str, label: str, notes: dict[str, dict[str, Any]],
          temporary: bool, path: list[str], ancestors: list[str], out: list[Row], start: int) -> None:
    for node in nodes:
        meta = node if temporary else notes.get(node["id"], {})
        title, url = node.get("title", ""), node.get("url", "")
        is_bookmark = node.get("type") == "bookmark" if temporary else bool(url)
        tags = [t.get("text", "") for t in meta.get("tags", [])]
        texts = [title, url, (meta.get("note") or "").strip(), *tags, " / ".join(path)]
        out.append(Row(section_id, label, node["id"], len(out) - start, is_bookmark, url,
                       [t.lower() for t in texts], set(tags), set(ancestors)))
        children = node.get("children") or []
        if children:
            _walk(children, section_id, label, notes, temporary, path + [title] if title else path,
                  ancestors + [node["id"]], out, start)


def scan_package(package: Path) -> list[Row]:
    """Every item of every section file, with the texts a search must match."""
    rows: list[Row] = []
    for file in sorted(package.rglob("*.json")):
        data = json.loads(file.read_text(encoding="utf-8"))
        start = len(rows)
        if data["sectionType"] == "permanent":
            notes = {e["syncId"]: e for e in data.get("identityMap", [])}
            _walk([data["tree"]], "permanent-section", data["slot"], notes, False, [], [], rows, start)
        else:
            _walk(data["items"], data["id"], data["label"], {}, True, [], [], rows, start)
    return rows


def brute_force(rows: list[Row], arguments: dict[str, Any]) -> tuple[list[set[tuple[str, str]]], set[tuple[str, str]]]:
    """Matched (section, item) keys per target and their union."""
    scoped = [r for r in rows if r.is_bookmark]
    if "section" in arguments:
        scoped = [r for r in scoped if arguments["section"] in (r.section_id, r.label)]
    if "folder_id" in arguments:
        scoped = [r for r in scoped if arguments["folder_id"] in r.ancestors]
    for tag in arguments.get("tags", []):
        scoped = [r for r in scoped if tag in r.tags]
    per_target = []
    for target in arguments["targets"]:
        terms = [t.lower() for t in target.split()]
        per_target.append({(r.section_id, r.item_id) for r in scoped
                           if all(any(t in text for text in r.texts) for t in terms)})
    return per_target, set().union(*per_target)


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
