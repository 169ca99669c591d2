"""Search literal semantics as properties: any query string, the same totals as a brute-force scan.

Random targets (``%``, ``_``, ``\\``, quotes, CJK, accented letters in both cases, 1-2 character terms,
any whitespace between terms) never raise and always count exactly the rows whose title, URL, note,
tag text or folder path contain every term, case-insensitively.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bookmark_research.core.app import App
from bookmark_research.core.registry import run
from tests.bruteforce import brute_force, scan_package
from tests.conftest import run_cli
from tests.packages import write_json

TOKENS = ["100%", "a_b", "c:\\path", 'say "hi"', "it's", "推理", "图谱", "模型推理加速", "Éclair", "été", "ÀB", "rust",
          "RUST", "Go", "x", "a%b_c", "/", "q/r", "中文", "tab", "..", "——", "％", "ab", "Ab", "aB", "éa", "Éa", "推"]
ALPHABET = "aAbBxXgGoOrRuUsStT%_\\\"'推理图谱模型éÉàÀ/.:1-"
SPACES = [" ", "  ", "\t", "\n", "\u3000"]


def _title(rng: random.Random) -> str:
    return " ".join(rng.choices(TOKENS, k=rng.randint(1, 3)))


def build_package(root: Path, seed: int = 7) -> Path:
    """A small package whose every field mixes the characters a literal search must treat as themselves."""
    rng = random.Random(seed)
    counter = iter(range(1, 10_000))
    identity: list[dict[str, Any]] = []

    def folder(parent: str, depth: int) -> dict[str, Any]:
        node_id = f"f{next(counter)}"
        children: list[dict[str, Any]] = []
        for _ in range(rng.randint(2, 5)):
            if depth < 3 and rng.random() < 0.3:
                children.append(folder(node_id, depth + 1))
                continue
            item_id = f"b{next(counter)}"
            children.append({"id": item_id, "parentId": node_id, "title": _title(rng),
                             "url": f"https://example.test/{rng.choice(TOKENS)}/{item_id}?q={rng.choice(TOKENS)}"})
            if rng.random() < 0.5:
                identity.append({"syncId": item_id, "note": _title(rng),
                                 "tags": [{"color": "blue", "text": rng.choice(TOKENS)}]})
        return {"id": node_id, "parentId": parent, "title": _title(rng), "children": children}

    tree = {"id": "root", "title": "", "children": [folder("root", 1) for _ in range(4)]}
    write_json(root / "永久栏目" / "A书签树（永久栏目）.json", {
        "format": "bookmark-canvas-section", "schemaVersion": 3, "sectionType": "permanent", "slot": "A",
        "title": "t", "descriptionMd": "", "fileRole": "primary", "identityMap": identity, "tree": tree})
    items = [{"id": f"t{n}", "sectionId": "temp-1", "type": "bookmark", "title": _title(rng),
              "url": f"https://temp.test/{rng.choice(TOKENS)}", "note": _title(rng),
              "tags": [{"color": "red", "text": rng.choice(TOKENS)}]} for n in range(20)]
    write_json(root / "临时栏目" / "常规链式" / "A-1.json", {
        "format": "bookmark-canvas-section", "schemaVersion": 2, "sectionType": "temporary", "id": "temp-1",
        "label": "A-1", "title": "t", "items": [{"id": "tf", "sectionId": "temp-1", "type": "folder",
                                                   "title": "临时 Éa %", "children": items}]})
    return root


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("properties")
    package = build_package(base / "package")
    app = App(base / "data")
    run(app, "sync_package", {"package_path": str(package), "source_id": "p"})
    yield app, scan_package(package), base / "data"
    app.close()


term = st.one_of(
    st.text(alphabet=ALPHABET, min_size=1, max_size=4),
    st.sampled_from(TOKENS).flatmap(lambda t: st.integers(0, len(t) - 1).flatmap(
        lambda i: st.integers(i + 1, len(t)).map(lambda j: t[i:j]))),  # a piece of what the package holds
)
target = st.lists(st.tuples(term, st.sampled_from(SPACES)), min_size=1, max_size=4).map(
    lambda parts: "".join(t + s for t, s in parts)).filter(lambda t: t.strip())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(targets=st.lists(target, min_size=1, max_size=3))
def test_totals_equal_a_brute_force_scan(indexed, targets):
    app, rows, _ = indexed
    arguments = {"targets": targets}
    per_target, union = brute_force(rows, arguments)
    out = run(app, "search_bookmarks", {"source_id": "p", "limit": 1000, **arguments}).model_dump(mode="json")
    distinct = list(dict.fromkeys(targets))
    assert [t["total"] for t in out["targets"]] == [len(per_target[targets.index(t)]) for t in distinct]
    assert out["total"] == len(union)
    assert {(r["section_id"], r["item_id"]) for r in out["results"]} == union


@pytest.mark.parametrize("target", ["a" * 2000, " ".join("a" * 1000), "é" * 2000, "推" * 2000,
                                    " ".join(f"{c}{d}" for c in "abcdefghij" for d in "abcdefghijklmnopqrstuvwxyz%_"),
                                    " ".join(["ab", "AB", "aB", "Ab"] * 170)])
def test_long_repetitive_targets_answer_correctly(indexed, target):
    app, rows, data = indexed
    proc = run_cli("search", "p", "--target", target, "--count-only", "--json", data_dir=data)
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr + proc.stdout
    import json

    assert json.loads(proc.stdout)["total"] == len(brute_force(rows, {"targets": [target]})[1])


def test_overlong_target_is_a_usage_error_naming_the_field(indexed):
    _, _, data = indexed
    proc = run_cli("search", "p", "--target", "a" * 2049, "--json", data_dir=data)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "targets[0]" in proc.stderr and "Traceback" not in proc.stderr
