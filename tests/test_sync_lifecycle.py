"""Sync semantics on snapshot sources: hash skip, deltas, partial/complete, renames, rollback, history."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bookmark_research.errors import BookmarkResearchError
from tests.packages import (A_PATH, B_PATH, CANVAS, PREFIX, TEMP_PATH, canvas, drop_temp_card, read_json, temporary,
                            write_json, zip_dir)


def test_demo_counts_and_copies(core, demo):
    out = core.sync(demo, source_id="d")
    assert out["mode"] == "snapshot" and out["state"] == "snapshot"
    c = out["counts"]
    assert (c["bookmarks"], c["unique_urls"], c["folders"], c["sections"], c["files"], c["nodes"], c["edges"],
            c["memberships"]) == (5, 4, 3, 3, 4, 5, 2, 1)
    b = core.search("d", section="B")
    a = core.search("d", section="A")
    assert b["total"] == 3 and [r["item_id"] for r in b["results"]] == [r["item_id"] for r in a["results"]]
    assert b["anchor_of"] == {"permanent-section-copy-copy-b": "permanent-section"}
    assert a["results"][0]["shown_in_anchors"] == ["permanent-section-copy-copy-b"]
    temp = core.search("d", section="A-1")["results"][0]
    assert temp["shown_in_anchors"] is None  # a temporary card has no copy anchors


def test_hash_skip_after_reopen(core, demo):
    core.sync(demo, source_id="d")
    revs = core.revisions("d")
    core.reopen()
    out = core.sync(demo, source_id="d")
    assert (out["changed_files"], out["skipped_files"], out["items_updated"]) == (0, 4, 0)
    assert core.revisions("d") == revs


def test_one_item_delta(core, demo):
    core.sync(demo, source_id="d")
    revs = core.revisions("d")
    data = read_json(demo / A_PATH)
    data["identityMap"][0]["note"] = "全新的备注 unique-marker"
    write_json(demo / A_PATH, data)
    out = core.sync(demo, source_id="d")
    assert (out["changed_files"], out["skipped_files"]) == (1, 3)
    assert (out["items_inserted"], out["items_updated"], out["items_deleted"]) == (0, 1, 0)
    after = core.revisions("d")
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in revs.items()}
    changed = {k for k in after if after[k][1] != revs[k][1]}
    assert changed == {("permanent-section", "bookmark-alpha")}
    assert after[("permanent-section", "bookmark-alpha")][1] == revs[("permanent-section", "bookmark-alpha")][1] + 1
    assert core.total("d", "unique-marker") == 1
    assert core.total("d", "unique-marker", section="B") == 1


def test_moving_a_group_changes_layout_only(core, demo):
    core.sync(demo, source_id="d")
    data = read_json(demo / CANVAS)
    data["nodes"][2]["x"] = 1000
    write_json(demo / CANVAS, data)
    out = core.sync(demo, source_id="d")
    assert out["changed_files"] == 1 and out["items_updated"] == 0
    assert core.total("d", group_id="group-one") == 0
    assert core.status("d")["counts"]["memberships"] == 0


def test_group_label_and_partial_overlap(core, demo):
    core.sync(demo, source_id="d")
    assert core.total("d", group_id="研究组") == 2
    ctx = core.context("d", group_id="group-one")
    assert [m for m in ctx["memberships"] if m["group_id"] == "group-one"] == [
        {"group_id": "group-one", "node_id": "temp-section-A-1"}]


def test_nested_groups_and_arrow_ends(core, demo):
    data = read_json(demo / CANVAS)
    data["nodes"].append({"id": "group-inner", "type": "group", "label": "inner", "x": 5, "y": 5, "width": 90, "height": 90})
    for edge in data["edges"]:
        edge["fromEnd"] = "arrow"
    write_json(demo / CANVAS, data)
    core.sync(demo, source_id="d")
    ctx = core.context("d", group_id="group-one")
    assert [e["direction"] for e in ctx["edges"]] == ["both", "reverse"]
    assert core.total("d", group_id="group-inner") == 2 and core.total("d", group_id="group-one") == 2
    visible = {n["node_id"] for n in ctx["nodes"]} | {n["node_id"] for n in ctx["related_nodes"]}
    assert all(e["from_node"] in visible and e["to_node"] in visible for e in ctx["edges"])
    inner = next(g for g in ctx["groups"] if g["node_id"] == "group-inner")
    assert inner["parent_groups"] == ["group-one"]
    with pytest.raises(BookmarkResearchError, match="outside"):
        core.context("d", group_id="group-one", item_id="bookmark-alpha")


@pytest.mark.parametrize("ends,direction", [({}, "forward"), ({"toEnd": "none"}, "none"),
                                            ({"fromEnd": "arrow"}, "both"),
                                            ({"fromEnd": "arrow", "toEnd": "none"}, "reverse")])
def test_edge_direction_defaults(core, demo, ends, direction):
    data = read_json(demo / CANVAS)
    data["edges"] = [{"id": "e", "fromNode": "permanent-section", "toNode": "group-one", **ends}]
    write_json(demo / CANVAS, data)
    core.sync(demo, source_id="d")
    assert core.context("d")["edges"][0]["direction"] == direction


def test_invalid_edge_end_fails(core, demo):
    data = read_json(demo / CANVAS)
    data["edges"][0]["toEnd"] = "diamond"
    write_json(demo / CANVAS, data)
    with pytest.raises(BookmarkResearchError, match=r"Demo.canvas: field edges\[0\].toEnd"):
        core.sync(demo, source_id="d")


def test_section_and_group_intersect_before_anchors(core, demo):
    data = read_json(demo / CANVAS)
    data["nodes"][1].update(x=20, y=20, width=10, height=10)  # copy-view inside group-one
    write_json(demo / CANVAS, data)
    core.sync(demo, source_id="d")
    assert core.total("d", section="A", group_id="group-one") == 0
    assert core.total("d", section="B", group_id="group-one") == 3
    assert core.total("d", group_id="group-one") == 5
    ctx = core.context("d", section="B", group_id="group-one")
    assert [s["section_id"] for s in ctx["sections"]] == ["permanent-section-copy-copy-b"]
    assert {n["node_id"] for n in ctx["nodes"]} == {"group-one", "copy-view"}
    ctx = core.context("d", item_id="bookmark-alpha", group_id="group-one")
    assert [s["section_id"] for s in ctx["sections"]] == ["permanent-section-copy-copy-b"]


def _snapshot_state(core, source_id):
    status = core.status(source_id)
    status["source"].pop("input_exists")
    files = sorted(p.relative_to(core.data_dir).as_posix() for p in (core.data_dir / "snapshots").rglob("*"))
    return status, core("source_history", source_id=source_id), files, core.revisions(source_id)


def test_bad_json_publishes_nothing(core, demo):
    core.sync(demo, source_id="d")
    before = _snapshot_state(core, "d")
    data = read_json(demo / A_PATH)
    data["identityMap"][0]["note"] = "never-visible"
    write_json(demo / A_PATH, data)
    (demo / TEMP_PATH).write_text('{"format": "bookmark-canvas-section",\n  "id": ', encoding="utf-8")
    with pytest.raises(BookmarkResearchError, match=r"A-1 示例.json: invalid JSON at line 2"):
        core.sync(demo, source_id="d")
    assert _snapshot_state(core, "d") == before
    assert core.total("d", "never-visible") == 0


def test_late_cycle_rolls_back(core, demo):
    core.sync(demo, source_id="d")
    before = _snapshot_state(core, "d")
    data = read_json(demo / A_PATH)
    data["identityMap"][0]["note"] = "never-visible"
    write_json(demo / A_PATH, data)
    anchor = read_json(demo / B_PATH)
    anchor["inheritFrom"] = PREFIX + B_PATH
    write_json(demo / B_PATH, anchor)
    with pytest.raises(BookmarkResearchError, match="cycle"):
        core.sync(demo, source_id="d")
    assert _snapshot_state(core, "d") == before
    assert core.total("d", "never-visible") == 0


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d["identityMap"].append({"syncId": "bookmark-alpha"}), "duplicate syncId"),
    (lambda d: d["tree"]["children"][0]["children"].append(dict(d["tree"]["children"][0]["children"][0])), "duplicate item id"),
    (lambda d: d["tree"]["children"][0]["children"][0].update(parentId="root"), "parentId"),
    (lambda d: d.update(sectionType="temporary"), "sectionType"),
    (lambda d: d["tree"]["children"][0]["children"][0].update(title=5), r"children\[0\]\.title"),
])
def test_invalid_sections_are_refused(core, demo, mutate, message):
    data = read_json(demo / A_PATH)
    mutate(data)
    write_json(demo / A_PATH, data)
    with pytest.raises(BookmarkResearchError, match=message):
        core.sync(demo, source_id="d")
    assert core("index_status")["sources"] == []


def test_duplicate_keys_and_nan_are_refused(core, demo):
    (demo / TEMP_PATH).write_text('{"format": "a", "format": "b"}', encoding="utf-8")
    with pytest.raises(BookmarkResearchError, match="duplicate JSON key 'format'"):
        core.sync(demo, source_id="d")
    write_json(demo / TEMP_PATH, temporary())
    (demo / CANVAS).write_text('{"nodes": [{"id": "n", "type": "text", "x": NaN, "y": 0, "width": 1, "height": 1}]}')
    with pytest.raises(BookmarkResearchError, match="NaN"):
        core.sync(demo, source_id="d")


def test_partial_keeps_and_supplied_card_prunes(core, demo, tmp_path):
    core.sync(demo, source_id="d")
    part = tmp_path / "part"
    data = read_json(demo / TEMP_PATH)
    data["items"][0]["children"].pop()
    write_json(part / TEMP_PATH, data)
    out = core.sync(part, source_id="d")
    assert out["items_deleted"] == 1
    assert sorted(out["retained_missing_files"]) == sorted([A_PATH, B_PATH, CANVAS])
    assert out["counts"]["bookmarks"] == 4
    assert core.total("d", section="A") == 3 and core.total("d", group_id="研究组") == 1
    assert core.sync(part, source_id="d")["changed_files"] == 0
    # the new version still holds the retained files
    snap = Path(out["snapshot_path"])
    assert (snap / A_PATH).exists() and (snap / CANVAS).exists()


def test_complete_versus_partial(core, demo):
    core.sync(demo, source_id="d", completeness="complete")
    drop_temp_card(demo)
    partial = core.sync(demo, source_id="d", completeness="partial")
    assert partial["counts"]["bookmarks"] == 5 and partial["retained_missing_files"] == [TEMP_PATH]
    complete = core.sync(demo, source_id="d", completeness="complete")
    assert complete["counts"]["bookmarks"] == 3
    assert complete["removed_files"] == [TEMP_PATH] and complete["retained_missing_files"] == []


def test_complete_mirror_can_drop_the_layout(core, demo):
    core.sync(demo, source_id="d", completeness="complete")
    (demo / CANVAS).unlink()
    out = core.sync(demo, source_id="d")
    c = out["counts"]
    assert (c["bookmarks"], c["nodes"], c["edges"], c["memberships"]) == (5, 0, 0, 0)


def test_complete_refuses_dangling_references(core, demo):
    core.sync(demo, source_id="d", completeness="complete")
    before = _snapshot_state(core, "d")
    (demo / TEMP_PATH).unlink()
    with pytest.raises(BookmarkResearchError, match="references missing files"):
        core.sync(demo, source_id="d")
    assert _snapshot_state(core, "d") == before


def test_renamed_entry_canvas(core, demo):
    core.sync(demo, source_id="d")
    revs = core.revisions("d")
    for old, new in ((CANVAS, "Renamed.canvas"), ("Renamed.canvas", CANVAS)):
        (demo / old).rename(demo / new)
        out = core.sync(demo, source_id="d")
        assert out["retained_missing_files"] == [] and out["replaced_canvas_files"] == [old]
        c = out["counts"]
        assert (c["files"], c["nodes"], c["edges"]) == (4, 5, 2)
        assert core.total("d", group_id="group-one") == 2 and core.revisions("d") == revs
    write_json(demo / "Second.canvas", {"nodes": [], "edges": []})
    with pytest.raises(BookmarkResearchError, match="at most one .canvas"):
        core.sync(demo, source_id="d")
    assert core.status("d")["counts"]["nodes"] == 5


def test_renamed_section_with_canvas_updated(core, demo):
    core.sync(demo, source_id="d")
    revs = core.revisions("d")
    new = "临时栏目/常规链式/A-1 改名.json"
    for old_path, new_path in ((TEMP_PATH, new), (new, TEMP_PATH)):
        (demo / old_path).rename(demo / new_path)
        write_json(demo / CANVAS, canvas(new_path))
        out = core.sync(demo, source_id="d")
        assert out["warnings"] == [] and out["retained_missing_files"] == []
        assert out["counts"]["files"] == 4 and core.revisions("d") == revs
        assert core.context("d", section="A-1")["sections"][0]["file_path"] == new_path
        assert core.total("d", group_id="group-one") == 2


def test_partial_rename_with_canvas_omitted(core, demo, tmp_path):
    core.sync(demo, source_id="d")
    new = "临时栏目/常规链式/A-1 改名.json"
    part = tmp_path / "part"
    write_json(part / new, read_json(demo / TEMP_PATH))
    out = core.sync(part, source_id="d")
    assert core.total("d", group_id="group-one") == 2
    assert any("Retained canvas uses prior file reference" in w for w in out["warnings"])
    write_json(part / CANVAS, canvas(TEMP_PATH))
    out = core.sync(part, source_id="d")
    assert any("Unresolved canvas file" in w for w in out["warnings"])
    assert core.total("d", group_id="group-one") == 0
    write_json(part / CANVAS, canvas(new))
    out = core.sync(part, source_id="d")
    assert out["warnings"] == [] and core.total("d", group_id="group-one") == 2


def test_partial_rename_of_primary_keeps_anchor(core, demo, tmp_path):
    core.sync(demo, source_id="d")
    part = tmp_path / "part"
    write_json(part / "永久栏目/A 新名字.json", read_json(demo / A_PATH))
    out = core.sync(part, source_id="d")
    assert any("Retained copy-anchor uses prior file reference" in w for w in out["warnings"])
    assert core.total("d", section="B") == 3
    assert core.sync(part, source_id="d")["items_updated"] == 0


def test_unsafe_reference_and_database_inside_package(core, demo, tmp_path):
    data = read_json(demo / CANVAS)
    data["nodes"][0]["file"] = "../outside/" + A_PATH
    write_json(demo / CANVAS, data)
    with pytest.raises(BookmarkResearchError, match="unsafe vault reference"):
        core.sync(demo, source_id="d")
    from tests.conftest import Core

    inside = Core(demo / "data")
    with pytest.raises(BookmarkResearchError, match="outside imported package"):
        inside.sync(demo)
    assert not (demo / "data").exists()


def test_snapshot_outlives_the_original(core, demo):
    out = core.sync(demo, source_id="study")
    snap = Path(out["snapshot_path"])
    for rel in (A_PATH, B_PATH, TEMP_PATH, CANVAS):
        assert (snap / rel).read_bytes() == (demo / rel).read_bytes()
    shutil.rmtree(demo)
    core.reopen()
    assert core.total("study") == 5
    record = core.status("study")["source"]
    assert record["input_exists"] is False and record["snapshot_exists"] is True and record["state"] == "snapshot"


def test_zip_wrappers_yield_identical_snapshots(core, demo, tmp_path):
    plain = zip_dir(demo, tmp_path / "plain.zip")
    wrapped = zip_dir(demo, tmp_path / "wrapped.zip", wrapper="中文导出")
    a = core.sync(plain, source_id="z")
    b = core.sync(wrapped, source_id="z")
    assert a["counts"]["bookmarks"] == b["counts"]["bookmarks"] == 5
    assert a["version_id"] == b["version_id"] and b["changed_files"] == 0
    plain.unlink()
    wrapped.unlink()
    assert core("source_history", source_id="z")["total"] == 1
    assert core.total("z") == 5


def test_reimport_reuses_identity_and_aliases(core, demo, tmp_path):
    first = core.sync(demo)
    second = core.sync(demo)
    assert first["source_id"] == second["source_id"] and second["changed_files"] == 0
    sid = first["source_id"]
    copy = tmp_path / "copy"
    shutil.copytree(demo, copy)
    core.sync(copy, source_id=sid)
    assert core.sync(demo)["source_id"] == sid
    record = core.status(sid)["source"]
    assert sorted(record["aliases"]) == sorted([str(demo), str(copy)])
    assert len(core("index_status")["sources"]) == 1


def test_no_content_based_merging(core, demo, tmp_path):
    first = core.sync(demo)["source_id"]
    copy = tmp_path / "copy"
    shutil.copytree(demo, copy)
    dup = core.sync(copy)
    assert dup["source_id"] != first and dup["duplicate_source_ids"] == [first]
    assert any("Identical content" in w for w in dup["warnings"])
    core.sync(copy, source_id=first)
    with pytest.raises(BookmarkResearchError, match="multiple sources"):
        core.sync(copy)


def test_single_card_updates_its_known_card(core, demo, tmp_path):
    core.sync(demo, source_id="study")
    data = read_json(demo / TEMP_PATH)
    data["items"][0]["children"][0]["note"] = "downloaded-note"
    card = tmp_path / "downloaded-card.json"
    write_json(card, data)
    out = core.sync(card, source_id="study")
    assert out["completeness"] == "partial" and out["items_updated"] == 1 and out["counts"]["bookmarks"] == 5
    assert A_PATH in out["retained_missing_files"]
    assert core.total("study", "downloaded-note", group_id="group-one") == 1
    assert core("source_history", source_id="study")["total"] == 2
    with pytest.raises(BookmarkResearchError, match="partial"):
        core.sync(card, source_id="study", completeness="complete")
    with pytest.raises(BookmarkResearchError, match="directory"):
        core.sync(card, source_id="study", mode="live")


def test_single_permanent_card_and_anchor_card(core, demo, tmp_path):
    core.sync(demo, source_id="s", completeness="complete")
    data = read_json(demo / A_PATH)
    data["identityMap"][0]["note"] = "card-level-update"
    write_json(tmp_path / "a.json", data)
    out = core.sync(tmp_path / "a.json", source_id="s")
    assert out["completeness"] == "partial"
    assert core.total("s", "card-level-update", section="B") == 1
    write_json(tmp_path / "b.json", read_json(demo / B_PATH))
    core.sync(tmp_path / "b.json", source_id="s")
    assert core.total("s", section="B") == 3 and core.status("s")["bookmarks"] == 5


def test_single_card_in_a_fresh_source_and_in_a_zip(core, demo, tmp_path):
    out = core.sync(demo / TEMP_PATH, source_id="fresh")
    assert out["counts"]["bookmarks"] == 2 and out["retained_missing_files"] == []
    import zipfile

    with zipfile.ZipFile(tmp_path / "card.zip", "w") as zf:
        zf.write(demo / TEMP_PATH, "download/only-card.json")
    assert core.sync(tmp_path / "card.zip", source_id="fresh")["changed_files"] == 0


def test_restore_into_a_new_database(core, demo, tmp_path):
    core.sync(demo, source_id="study")
    data = read_json(demo / TEMP_PATH)
    data["items"][0]["children"][0]["note"] = "restored-note"
    write_json(tmp_path / "card.json", data)
    latest = core.sync(tmp_path / "card.json", source_id="study")["snapshot_path"]
    shutil.rmtree(demo)
    from tests.conftest import Core

    fresh = Core(tmp_path / "new-data")
    out = fresh.sync(latest, completeness="complete")
    assert out["source_id"] == "study" and out["counts"]["bookmarks"] == 5
    assert fresh.total("study", "restored-note", group_id="group-one") == 1
    fresh.app.close()


def test_restore_command_brings_back_an_old_version(core, demo):
    first = core.sync(demo, source_id="s")
    drop_temp_card(demo)
    second = core.sync(demo, source_id="s", completeness="complete")
    assert second["counts"]["bookmarks"] == 3
    hist = core("source_history", source_id="s")
    assert [v["version_id"] for v in hist["versions"]] == [second["version_id"], first["version_id"]]
    assert [v["current"] for v in hist["versions"]] == [True, False] and hist["restores"] == []
    restored = core("source_restore", source_id="s", version_id=first["version_id"])
    assert restored["version_id"] == first["version_id"] and restored["counts"]["bookmarks"] == 5
    assert core.total("s", section="A-1") == 2  # the dropped card is back
    hist = core("source_history", source_id="s")
    assert [v["version_id"] for v in hist["versions"]] == [second["version_id"], first["version_id"]]
    assert [v["current"] for v in hist["versions"]] == [False, True]
    (event,) = hist["restores"]
    assert (event["version_id"], event["previous_version_id"]) == (first["version_id"], second["version_id"])
    assert hist["versions"][1]["restored_at"] == event["restored_at"] and hist["versions"][0]["restored_at"] is None
    with pytest.raises(BookmarkResearchError, match="unknown version"):
        core("source_restore", source_id="s", version_id="v-nope")


def test_restore_keeps_the_source_settings_for_later_syncs(core, demo, tmp_path):
    """README: a plain sync is partial by default; a restore must not turn the source into a complete mirror."""
    first = core.sync(demo, source_id="s")
    assert first["completeness"] == "partial"
    data = read_json(demo / A_PATH)
    data["identityMap"][0]["note"] = "second-version"
    write_json(demo / A_PATH, data)
    core.sync(demo, source_id="s")
    restored = core("source_restore", source_id="s", version_id=first["version_id"])
    record = core.status("s")["source"]
    assert (record["completeness"], record["input_path"]) == ("partial", str(demo))
    assert restored["completeness"] == "partial" and restored["input_path"] == str(demo)
    assert str(Path(restored["snapshot_path"])) not in record["aliases"]
    newdir = tmp_path / "new"
    write_json(newdir / TEMP_PATH, read_json(demo / TEMP_PATH))
    later = core.sync(newdir, source_id="s")  # plain sync: partial, as the user left the source
    assert later["completeness"] == "partial" and later["removed_files"] == []
    assert core.status("s")["bookmarks"] == 5


def test_tampered_snapshot(core, demo, tmp_path):
    out = core.sync(demo, source_id="s")
    snap = Path(out["snapshot_path"])
    target = snap / TEMP_PATH
    os.chmod(target, 0o644)
    target.write_text(target.read_text(encoding="utf-8").replace("临时笔记", "篡改"), encoding="utf-8")
    from tests.conftest import Core

    other = Core(tmp_path / "other")
    with pytest.raises(BookmarkResearchError, match="integrity"):
        other.sync(snap)
    other.app.close()
    write_json(tmp_path / "a.json", read_json(demo / A_PATH))
    with pytest.raises(BookmarkResearchError, match="missing or changed"):
        core.sync(tmp_path / "a.json", source_id="s")
    assert core.status("s")["bookmarks"] == 5


def test_invalid_export_changes_nothing(core, demo):
    core.sync(demo, source_id="s")
    before = _snapshot_state(core, "s")
    (demo / A_PATH).write_text("{not json", encoding="utf-8")
    with pytest.raises(BookmarkResearchError, match="invalid JSON"):
        core.sync(demo, source_id="s")
    assert _snapshot_state(core, "s") == before


def test_git_worktree_defaults_to_live(core, demo, tmp_path):
    (tmp_path / ".git").mkdir()
    out = core.sync(demo)
    assert out["mode"] == "live" and out["state"] == "current" and out["package_path"] == str(demo)
    assert core.sync(demo, mode="snapshot")["mode"] == "snapshot"


def test_remove_needs_confirmation(core, demo):
    out = core.sync(demo, source_id="x")
    preview = core("source_remove", source_id="x")
    assert preview["status"] == "confirmation_required" and preview["would_remove"]["items"] == out["counts"]["items"]
    assert core.status("x")["bookmarks"] == 5
    removed = core("source_remove", source_id="x", confirm=True)
    assert removed["status"] == "removed" and removed["snapshot_removed"] is True
    assert core("index_status")["sources"] == []
    conn = core.app.connect()
    assert conn.execute("SELECT COUNT(*) FROM items").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM items_fts").fetchone()[0] == 0
    assert not core.app.snapshots.source_dir("x").exists()
    with pytest.raises(BookmarkResearchError, match="unknown source_id"):
        core("source_remove", source_id="x")


def test_unknown_ids_are_clear_errors(core, demo):
    core.sync(demo, source_id="d")
    for kwargs, message in (({"section": "Z"}, "unknown section"), ({"group_id": "nope"}, "unknown group"),
                            ({"folder_id": "nope"}, "unknown folder")):
        with pytest.raises(BookmarkResearchError, match=message):
            core.search("d", **kwargs)
    with pytest.raises(BookmarkResearchError, match="unknown item"):
        core.context("d", item_id="nope")
    with pytest.raises(BookmarkResearchError, match="unknown source_id"):
        core.search("nope")


def test_merge_identical_sources(core, demo, tmp_path):
    first = core.sync(demo)["source_id"]
    copy = tmp_path / "copy"
    shutil.copytree(demo, copy)
    dup = core.sync(copy)["source_id"]
    preview = core("source_merge", source_id=dup, into_source_id=first)
    assert preview["status"] == "confirmation_required" and len(core("index_status")["sources"]) == 2
    merged = core("source_merge", source_id=dup, into_source_id=first, confirm=True)
    assert merged["status"] == "merged" and str(copy) in merged["aliases"]
    assert [s["source_id"] for s in core("index_status")["sources"]] == [first]
    assert core.sync(copy)["source_id"] == first  # the duplicate's folder now updates the survivor
    other = tmp_path / "other"
    shutil.copytree(demo, other)
    (other / TEMP_PATH).unlink()
    different = core.sync(other)["source_id"]
    with pytest.raises(BookmarkResearchError, match="different content versions"):
        core("source_merge", source_id=different, into_source_id=first, confirm=True)
