"""The sync's fast paths give the same index as a full import: identity-map-only edits, stored counts,
the tree-text digest, and indexes written by older versions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import bookmark_research.index.writer as writer
from bookmark_research.canvas.jsonspan import load_with_digest
from bookmark_research.canvas.strictjson import load_object
from bookmark_research.core.app import App
from bookmark_research.core.registry import run
from bookmark_research.errors import InvalidInputError
from tests.packages import A_PATH, drop_temp_card, read_json, write_json

COLUMNS = ("section_id, item_id, parent_id, item_type, position, preorder, subtree_end, depth, title, url, url_hash, "
           "note, note_color, tags_json, tag_text, path_json, folder_path, extra_json, metadata_json, synthetic, "
           "content_hash")


def _rows(app: App, source_id: str) -> list[tuple[Any, ...]]:
    conn = app.connect()
    rows = conn.execute(f"SELECT {COLUMNS} FROM items WHERE source_id=? ORDER BY section_id, preorder", (source_id,))
    tags = conn.execute("SELECT i.item_id, t.position, t.color, t.text FROM item_tags t JOIN items i ON i.pk = t.item_pk "
                        "WHERE i.source_id=? ORDER BY 1, 2", (source_id,))
    return rows.fetchall() + tags.fetchall()


def _fresh(package: Path, tmp_path: Path) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    """A full import of ``package`` into a new index: what any incremental sync must reproduce."""
    with App(tmp_path / "fresh") as app:
        out = run(app, "sync_package", {"package_path": str(package), "source_id": "d"}).model_dump()
        return out, _rows(app, "d")


def _edit_identity(data: dict[str, Any]) -> None:
    entries = data["identityMap"]
    entries[0]["note"] = "edited-note"
    entries[0]["tags"].append({"color": "pink", "text": "新标签"})  # an unknown colour: a warning
    entries.append({"syncId": "bookmark-beta", "note": "added-note", "noteColor": "blue"})
    entries.append({"syncId": "companies", "note": "a folder's note"})
    entries.append({"syncId": "not-in-the-tree", "note": "orphan"})


def test_identity_only_edit_skips_the_walk_and_matches_a_full_import(core, demo, tmp_path, monkeypatch):
    core.sync(demo, source_id="d")
    revs = core.revisions("d")
    data = read_json(demo / A_PATH)
    _edit_identity(data)
    write_json(demo / A_PATH, data)

    def no_walk(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the browser tree was walked although only its identity map changed")

    monkeypatch.setattr(writer, "write_items", no_walk)
    out = core.sync(demo, source_id="d")
    monkeypatch.undo()
    fresh_out, fresh_rows = _fresh(demo, tmp_path)
    assert _rows(core.app, "d") == fresh_rows
    assert out["warnings"] == fresh_out["warnings"] and any("'pink'" in w for w in out["warnings"])
    assert (out["items_updated"], out["items_inserted"], out["items_deleted"]) == (3, 0, 0)
    bumped = {k for k, (_, rev) in core.revisions("d").items() if rev != revs[k][1]}
    assert bumped == {("permanent-section", i) for i in ("bookmark-alpha", "bookmark-beta", "companies")}
    assert core.total("d", "edited-note") == 1 and core.total("d", "added-note") == 1 and core.total("d", "新标签") == 1
    assert out["counts"] == fresh_out["counts"]


def test_removed_entry_clears_the_note(core, demo, tmp_path):
    core.sync(demo, source_id="d")
    data = read_json(demo / A_PATH)
    data["identityMap"] = []
    write_json(demo / A_PATH, data)
    out = core.sync(demo, source_id="d")
    assert out["items_updated"] == 1 and core.total("d", "关注", section="A") == 0
    assert _rows(core.app, "d") == _fresh(demo, tmp_path)[1]


def test_tree_edit_walks_the_tree(core, demo, tmp_path, monkeypatch):
    core.sync(demo, source_id="d")
    data = read_json(demo / A_PATH)
    _edit_identity(data)
    data["tree"]["children"][0]["children"][1]["title"] = "Renamed beta"
    write_json(demo / A_PATH, data)
    walked = []
    real = writer.write_items
    monkeypatch.setattr(writer, "write_items", lambda *a, **k: walked.append(a[2].section_id) or real(*a, **k))
    out = core.sync(demo, source_id="d")
    assert walked == ["permanent-section"]
    fresh_out, fresh_rows = _fresh(demo, tmp_path)
    assert _rows(core.app, "d") == fresh_rows and out["warnings"] == fresh_out["warnings"]


def test_reformatted_tree_text_walks_and_changes_nothing(core, demo):
    core.sync(demo, source_id="d")
    revs = core.revisions("d")
    (demo / A_PATH).write_text(json.dumps(read_json(demo / A_PATH), ensure_ascii=True), encoding="utf-8")
    out = core.sync(demo, source_id="d")
    assert out["changed_files"] == 1 and (out["items_updated"], out["items_inserted"]) == (0, 0)
    assert core.revisions("d") == revs


def test_counts_are_stored_by_the_sync_and_kept_by_a_no_op(core, demo):
    first = core.sync(demo, source_id="d")["counts"]
    conn = core.app.connect()
    assert json.loads(conn.execute("SELECT counts_json FROM source_stats WHERE source_id='d'").fetchone()[0]) == first
    assert core.sync(demo, source_id="d")["counts"] == first == core.status("d")["counts"]
    drop_temp_card(demo)
    changed = core.sync(demo, source_id="d", completeness="complete")["counts"]
    assert (changed["bookmarks"], changed["sections"]) == (first["bookmarks"] - 2, first["sections"] - 1)
    assert core.status("d")["counts"] == changed
    core("source_remove", source_id="d", confirm=True)
    assert conn.execute("SELECT count(*) FROM source_stats").fetchone()[0] == 0


def test_version_3_index_gains_url_keys_digests_and_counts(core, demo, tmp_path):
    expected = core.sync(demo, source_id="d")
    before = core.search("d", "example", limit=50)
    conn = core.app.connect()
    conn.executescript("""
        DROP TABLE source_stats;
        ALTER TABLE items DROP COLUMN url_hash;
        ALTER TABLE sections DROP COLUMN tree_digest;
        PRAGMA user_version=3;
    """)
    core.reopen()
    conn = core.app.connect()
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 4
    assert conn.execute("SELECT count(*) FROM items WHERE url <> '' AND url_hash IS NULL").fetchone()[0] == 0
    assert core.search("d", "example", limit=50) == before
    assert core.status("d")["counts"] == expected["counts"]
    out = core.sync(demo, source_id="d")
    assert out["counts"] == expected["counts"] and out["changed_files"] == 0
    data = read_json(demo / A_PATH)
    data["identityMap"][0]["note"] = "after-upgrade"
    write_json(demo / A_PATH, data)
    assert core.sync(demo, source_id="d")["items_updated"] == 1  # no digest stored yet: a full walk, same answer
    assert core.total("d", "after-upgrade") == 1


@pytest.mark.parametrize("text", [
    '{"tree": {"id": "r"}, "a": 1}',
    '\ufeff {"a" : [1, 2, {"b": null}] , "tree" :[ ] }\n',
    '{}',
    '{"tree": "x", "tree2": {"tree": 1}}',
    '{"a": "\\u00e9\\n", "tree": {"t": "中文 \\ud83d\\ude00"}}',
])
def test_digest_route_decodes_like_load_object(text):
    data = text.encode("utf-8")
    value, digest = load_with_digest(data, "f.json", "tree")
    assert value == load_object(data, "f.json")
    assert (digest is None) == ("tree" not in value)


@pytest.mark.parametrize("text", [
    '{"a": 1, "a": 2}', '{"a": NaN}', '[1]', '{"a": 1} x', '{"a": 1', '', '{"a": 1,}', b'\xff{}',
])
def test_digest_route_refuses_like_load_object(text):
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    with pytest.raises(InvalidInputError) as expected:
        load_object(data, "f.json")
    with pytest.raises(InvalidInputError, match="^f.json: ") as got:
        load_with_digest(data, "f.json", "tree")
    assert str(got.value) == str(expected.value)


def test_digest_follows_the_tree_text_only():
    def digest(text: str) -> str | None:
        return load_with_digest(text.encode("utf-8"), "f.json", "tree")[1]

    base = digest('{"identityMap": [1], "tree": {"id": "r", "children": []}}')
    assert base == digest('{"identityMap": [2, 3], "title": "x", "tree": {"id": "r", "children": []}}')
    assert base != digest('{"identityMap": [1], "tree": {"id": "r", "children": [] }}')
    assert base != digest('{"identityMap": [1], "tree": {"id": "s", "children": []}}')
