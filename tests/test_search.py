"""Search semantics: literal substrings, CJK of any length, AND terms, filters, paging, ranking."""

from __future__ import annotations

import pytest

from bookmark_research.errors import BookmarkResearchError
from tests.packages import A_PATH, CANVAS, FIXTURES, read_json, write_json


@pytest.fixture
def d(core, demo):
    core.sync(demo, source_id="d")
    return core


@pytest.fixture
def zh(core):
    core.sync(FIXTURES / "sample-zh", source_id="zh", mode="snapshot")
    return core


@pytest.fixture
def en(core):
    core.sync(FIXTURES / "sample-en", source_id="en", mode="snapshot")
    return core


def test_literal_batch_targets(d):
    out = d.search("d", "示例公司甲", "%_", "\\done", limit=1)
    assert out["total"] == 2
    assert [t["total"] for t in out["targets"]] == [1, 1, 1]
    assert all(len(t["results"]) == 1 for t in out["targets"])
    assert d.total("d", "%") == 1 and d.total("d", "_") == 1
    assert d.total("d", "' OR 1=1 --") == 0
    assert d.total("d", '"') == 0 and d.total("d", "100%_") == 1


def test_case_and_cjk_matching(d, zh):
    assert d.total("d", "examplebeta") == 1
    assert d.total("d", "查询") == 1  # two CJK characters, only in a note
    assert d.total("d", "查") == 1  # one character
    assert zh.total("zh", "推理加速") == 2  # four characters inside a longer title
    assert zh.total("zh", "RAG") == 2  # AutoRAG and 检索增强生成's URL kg-rag
    assert zh.total("zh", "autorag") == 1


def test_whitespace_means_and(zh):
    assert zh.total("zh", "推理 加速") == 3
    assert zh.total("zh", "AutoRAG 盘古") == 0
    assert zh.total("zh", "推理 ex") == 1  # a short and a long term together


def test_tag_filters(d):
    assert d.total("d", tags=["关注"]) == 2
    assert d.total("d", tags=["关注", "missing"]) == 0
    green = d.search("d", tag_colors=["green"])
    assert [r["item_id"] for r in green["results"]] == ["temp-one"]
    with pytest.raises(BookmarkResearchError, match=r"tag_colors\[0\]: Input should be 'red'"):
        d.total("d", tag_colors=["magenta"])  # not a Bookmark Canvas tag colour


def test_folder_subtree_paging(d):
    out = d.search("d", folder_id="companies", limit=2, offset=1)
    assert out["total"] == 3 and [r["item_id"] for r in out["results"]] == ["bookmark-beta", "bookmark-literal"]
    assert out["next_offset"] is None
    with pytest.raises(BookmarkResearchError, match="unknown folder"):
        d.search("d", folder_id="nope")


def test_count_only_and_pagination(d):
    out = d.search("d", limit=0)
    assert out["total"] == 5 and out["results"] == [] and out["next_offset"] is None
    assert d.search("d", section="A", limit=1)["next_offset"] == 1
    assert d.search("d", section="A", limit=10)["next_offset"] is None
    folders = d.search("d", item_types=["folder"])
    root = next(r for r in folders["results"] if r["item_id"] == "root")
    assert root["synthetic"] is True and root["title"] == ""
    assert folders["total"] == 3


def test_canvas_matches_are_reported_not_counted(d, demo):
    data = read_json(demo / CANVAS)
    data["nodes"][2]["label"] = "123 Release_100%"
    data["nodes"][4]["text"] = "some markdown card \\ Release_100%"
    data["edges"][0]["label"] = "123"
    write_json(demo / CANVAS, data)
    d.sync(demo, source_id="d")
    out = d.search("d", "123")
    assert out["total"] == 0 and {m["kind"] for m in out["canvas_matches"]} == {"group", "edge"}
    assert [m["kind"] for m in d.search("d", "markdown")["canvas_matches"]] == ["text"]
    for literal, kinds in (("%", {"group", "text"}), ("_", {"group", "text"}), ("\\", {"text"})):
        assert {m["kind"] for m in d.search("d", literal).get("canvas_matches") or []} == kinds, literal
    assert d.search("d", "ReleaseX100%").get("canvas_matches") is None


def test_item_context(d):
    ctx = d.context("d", item_id="bookmark-alpha")
    item = ctx["items"][0]
    assert item["note_color"] == "orange" and item["path"] == ["公司"]
    assert item["metadata"]["extra"] == "preserved" and item["raw_json"]["future"] == 1
    assert [a["item_id"] for a in item["ancestors"]] == ["root", "companies"]
    primary = next(s for s in ctx["sections"] if s["section_id"] == "permanent-section")
    assert "tree" not in primary["raw_json"] and primary["raw_json"]["unknown_header"] == {"keep": True}
    assert {s["section_id"] for s in ctx["sections"]} == {"permanent-section", "permanent-section-copy-copy-b"}


def test_relevance_prefers_title_matches(en):
    out = en.search("en", "bm25")
    assert out["order"] == "relevance" and out["ranking"] == "bm25"
    assert out["results"][0]["title"] == "Okapi BM25 - Wikipedia"
    scores = [r["score"] for r in out["results"]]
    assert scores == sorted(scores, reverse=True)
    note_only = en.search("en", "pinning")["results"][0]
    assert note_only["snippet"] == {"field": "note", "text": "Chapter 4 explains [pinning] well."}


def _document_order(package, term):
    """Bookmarks containing ``term`` in their URL, as the section files list them (depth first), by section id."""
    import json

    sections = []
    for path in sorted(package.rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != "bookmark-canvas-section" or data.get("fileRole") == "copy-anchor":
            continue
        if data["sectionType"] == "permanent":
            sid = "permanent-section" if data["slot"] == "A" else f"permanent-section-{data['slot']}"
            roots = data["tree"] if isinstance(data["tree"], list) else [data["tree"]]
        else:
            sid, roots = data["id"], data["items"]
        found, stack = [], list(reversed(roots))
        while stack:
            node = stack.pop()
            if term in node.get("url", ""):
                found.append(node["id"])
            stack.extend(reversed(node.get("children") or []))
        sections.append((sid, found))
    return [item for _, found in sorted(sections) for item in found]


def test_tree_order_is_document_order(en):
    expected = _document_order(FIXTURES / "sample-en", "https://")
    assert len(expected) == 18  # every bookmark of the sample
    out = en.search("en", "https://", order="tree", limit=100)
    assert [r["item_id"] for r in out["results"]] == expected
    ranked = en.search("en", "https://", limit=100)
    assert [r["item_id"] for r in ranked["results"]] != expected  # relevance order really is another order


def test_title_weight_beats_url(core, tmp_path):
    from tests.packages import temporary

    data = temporary()
    items = data["items"][0]["children"]
    items[0].update(title="unrelated page", url="https://zebra.example/zebra-guide", note="", tags=[])
    items[1].update(title="Zebra field guide", url="https://example.test/animals")
    write_json(tmp_path / "p" / "临时栏目" / "c.json", data)
    core.sync(tmp_path / "p", source_id="w")
    out = core.search("w", "zebra")
    assert [r["title"] for r in out["results"]] == ["Zebra field guide", "unrelated page"]


def test_validation_errors_name_the_field(d):
    for kwargs, field in (({"limit": 1001}, "limit"), ({"offset": -1}, "offset"),
                          ({"item_types": ["bookmark", "bookmark"]}, "item_types"),
                          ({"targets": ["   "]}, "targets[0]"), ({"sql": "drop"}, "sql")):
        with pytest.raises(BookmarkResearchError, match=field.replace("[", r"\[").replace("]", r"\]")):
            d("search_bookmarks", source_id="d", **kwargs)


def test_many_distinct_targets_each_with_its_own_page(en):
    out = en.search("en", "tokio", "async", "nothing-matches-this", limit=1)
    assert [t["total"] for t in out["targets"]] == [3, 4, 0]
    assert out["targets"][0]["next_offset"] == 1 and out["targets"][2]["next_offset"] is None
    assert out["total"] == len({*(r["item_id"] for r in en.search("en", "tokio", limit=100)["results"]),
                                *(r["item_id"] for r in en.search("en", "async", limit=100)["results"])})


def test_english_sample_layout(en):
    c = en.status("en")["counts"]
    assert (c["bookmarks"], c["unique_urls"], c["user_folders"], c["sections"]) == (18, 15, 6, 5)
    assert (c["nodes"], c["edges"], c["memberships"]) == (8, 4, 6)
    ctx = en.context("en")
    assert sorted(e["direction"] for e in ctx["edges"]) == ["both", "forward", "none", "reverse"]
    rust = next(g for g in ctx["groups"] if g["label"] == "Rust runtimes")
    assert rust["parent_groups"] == ["group-research"]
    assert en.total("en", section="B") == 10
    assert en.total("en", group_id="Research") == 16  # A-1, A-1-1 and the copy of A (10)


def test_sections_by_label_slot_and_path(en):
    assert en.total("en", section="A-1") == 4
    assert en.total("en", section="Temporary/General Chain/A-1-1 Benchmarks.json") == 2
    assert en.total("en", section="temp-section-AI") == 2
    assert en.total("en", "candidate", tag_colors=["yellow"]) == 1


def test_permanent_note_edit_is_searchable_through_copy(d, demo):
    data = read_json(demo / A_PATH)
    data["identityMap"][0]["tags"].append({"color": "red", "text": "urgent"})
    write_json(demo / A_PATH, data)
    d.sync(demo, source_id="d")
    assert d.total("d", tags=["urgent"], section="B") == 1


def test_folder_path_terms_match_through_folder_titles(en):
    # "engines" is only in the folder title "Search engines": its three bookmarks match through their path
    found = en.search("en", "engines")
    assert found["total"] == 3 and {r["folder_path"] for r in found["results"]} == {"Bookmarks bar / Search engines"}
    assert found["results"][0]["snippet"]["field"] == "folder_path"
    # terms may match different fields: one in the path, one in the title
    assert [r["title"] for r in en.search("en", "engines okapi")["results"]] == ["Okapi BM25 - Wikipedia"]
    # nested folders: everything under "Bookmarks bar" (the folder itself matches through its title)
    bar = en.search("en", "bookmarks bar", item_types=["bookmark", "folder"], limit=100)
    assert {r["title"] for r in bar["results"] if r["item_type"] == "folder"} == {"Bookmarks bar", "Rust",
                                                                                  "Search engines"}
    assert en.total("en", "bookmarks bar") == 7
    # a direct field match ranks above a match through the folder path only
    ranked = en.search("en", "rust")["results"]
    direct = {r["item_id"] for r in ranked if "rust" in (r["title"] + r["url"] + r["note"]).lower()}
    assert direct and {r["item_id"] for r in ranked[:len(direct)]} == direct  # all of them before path-only matches


def test_folder_path_and_short_terms_together(zh):
    # 大模型 (3 characters) names a folder and a title; 推理 (2 characters) goes to the character index
    assert [r["title"] for r in zh.search("zh", "大模型 推理")["results"]] == ["vLLM 推理加速方案"]
    assert zh.total("zh", "大模型") == 4  # three bookmarks in the folder, one with it in its title


def test_version_1_index_is_upgraded_in_place(core, demo):
    core.sync(demo, source_id="d")
    conn = core.app.connect()
    conn.executescript("""
        DROP TRIGGER items_ad; DROP TRIGGER items_au; DROP TABLE folders_fts; DROP TABLE items_fts;
        CREATE VIRTUAL TABLE items_fts USING fts5(title, url, note, tag_text, folder_path, content='items',
            content_rowid='pk', tokenize='trigram');
        INSERT INTO items_fts(items_fts) VALUES ('rebuild');
        PRAGMA user_version=1;
    """)
    core.reopen()
    assert core.app.connect().execute("PRAGMA user_version").fetchone()[0] == 4
    assert core.total("d", "示例公司甲") == 1 and core.total("d", "examplebeta") == 1
    assert core.total("d", "研究") == 2  # folder path through the character index


def test_compact_output_shares_rows(d):
    full = d.search("d", "example", "示例", limit=10)
    small = d.search("d", "example", "示例", limit=10, compact=True)
    assert small["compact_format"] == "bookmark-search-v1" and small["results"] == []
    assert (small["total"], small["next_offset"]) == (full["total"], full["next_offset"])
    assert [small["rows"][k]["item_id"] for k in small["result_refs"]] == [r["item_id"] for r in full["results"]]
    for compact_page, full_page in zip(small["targets"], full["targets"]):
        assert [small["rows"][k]["item_id"] for k in compact_page["result_refs"]] == [
            r["item_id"] for r in full_page["results"]]
    single = d.search("d", "example", limit=10, compact=True)  # one target: its page is the union page
    assert single["targets"][0]["result_refs"] == single["result_refs"] and len(single["rows"]) == len(
        single["result_refs"])
    alpha = d.search("d", "https://example.test/alpha", compact=True)
    assert len(alpha["rows"]) == 2 and "source" not in next(iter(alpha["rows"].values()))  # one URL, two instances


def _deep_package(root, depth):
    node = '{"id": "leaf", "title": "leaf", "url": "https://e.example/leaf"}'
    for level in range(depth, 0, -1):
        node = f'{{"id": "f{level}", "title": "folder number {level}", "children": [{node}]}}'
    text = ('{"format": "bookmark-canvas-section", "schemaVersion": 3, "sectionType": "permanent", "slot": "A", '
            f'"title": "deep", "fileRole": "primary", "tree": {{"id": "root", "title": "", "children": [{node}]}}}}')
    (root / "Permanent").mkdir(parents=True)
    (root / "Permanent" / "A.json").write_text(text, encoding="utf-8")
    return root


def test_context_of_a_deep_item_grows_linearly_with_depth(core, tmp_path):
    import json

    sizes = {}
    for depth in (60, 240):
        core.sync(_deep_package(tmp_path / f"d{depth}", depth), source_id=f"d{depth}")
        ctx = core.context(f"d{depth}", item_id="leaf")
        item = ctx["items"][0]
        assert [a["item_id"] for a in item["ancestors"]] == ["root"] + [f"f{i}" for i in range(1, depth + 1)]
        assert item["path"] == [f"folder number {i}" for i in range(1, depth + 1)]  # the full path, once
        assert [a["depth"] for a in item["ancestors"]] == list(range(depth + 1))
        sizes[depth] = len(json.dumps(ctx, ensure_ascii=False))
    assert sizes[240] / sizes[60] < 5  # linear: about 4x for 4x the depth (it was about 16x)
