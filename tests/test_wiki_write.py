"""Writing wiki pages: evidence gating, page shape, revisions, concurrency and crash safety."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from bookmark_research import atomic
from bookmark_research.config import settings
from bookmark_research.errors import BookmarkResearchError, ConflictError, StorageError
from bookmark_research.wiki import store as wiki_store
from tests.wiki_support import QUOTE, Lab, lab  # noqa: F401

# --- gating by evidence (reference scenarios 1-3, 9) ------------------------------------------


@pytest.mark.parametrize("verdict", [None, "uncertain", "rejected"])
def test_a_source_without_an_accepted_review_refuses_the_write(lab: Lab, verdict: str | None) -> None:
    sid = lab.source(lab.rid, "Another page: sessions may be resumed.", verdict=None, url="https://example.com/b")
    cid = lab.claim(lab.rid, sid, "sessions may be resumed")
    if verdict is not None:
        lab.review(lab.rid, sid, verdict)
    with pytest.raises(BookmarkResearchError, match=f"accepted source review: {sid}"):
        lab.write("sessions", lab.page(claims=[lab.ref(cid)]))
    assert not lab.wiki.exists()


def test_a_retracted_claim_refuses_the_write(lab: Lab) -> None:
    lab.retract(lab.rid, lab.cid)
    with pytest.raises(BookmarkResearchError, match=rf"^page\.sections\[0\]\.claims\[0\] \({lab.rid}/c1\): .*retracted claim: c1"):
        lab.write("sessions")
    assert not lab.wiki.exists()


def test_a_quote_whose_saved_text_was_edited_refuses_the_write(lab: Lab) -> None:
    lab.edit_body(lab.rid, lab.sid, "Something else entirely.")
    with pytest.raises(BookmarkResearchError, match="no longer matches saved evidence"):
        lab.write("sessions")
    assert not lab.wiki.exists()


def test_unknown_claims_and_sessions_refuse_the_write(lab: Lab) -> None:
    with pytest.raises(BookmarkResearchError, match=r"^page\.sections\[1\]\.claims\[1\] .*Unknown claim: c9"):
        lab.write("sessions", lab.page(sections=[
            {"heading": "Fine", "text": "Cited.", "claims": [lab.ref()]},
            {"heading": "Not", "text": "Miscited.", "claims": [lab.ref(), lab.ref("c9")]}]))
    with pytest.raises(BookmarkResearchError, match="r-00000000000000ff"):
        lab.write("sessions", lab.page(claims=[lab.ref(rid="r-00000000000000ff")]))
    assert not lab.wiki.exists()


def test_an_accepted_active_claim_is_written_with_its_evidence_snapshot(lab: Lab) -> None:
    out = lab.write("sessions")
    assert (out["revision"], out["status"], out["semantic_review"]) == (1, "written", "caller_declared")
    for path in (*out["artifacts"].values(), *out["catalog"].values()):
        assert Path(path).is_absolute() and Path(path).is_file()
    page = lab("wiki_get", page_id="sessions")
    cite = page["evidence"][0]["citations"][0]
    assert (cite["quote"], cite["source_id"], page["evidence"][0]["research_id"]) == (QUOTE, "s1", lab.rid)
    assert cite["inventory_ids"] and cite["inventory_ids"][0].startswith("u-")
    assert cite["bookmark_refs"] and cite["bookmark_refs"][0]["source_id"] == "demo"
    assert cite["span"] == {"start": 0, "end": len(QUOTE)} and cite["artifact_sha256"]["body_file"]
    assert Path(cite["body_file"]).is_absolute()  # resolved for verified evidence in the returned view
    assert page["validation"]["status"] == "current"
    lint = lab("wiki_lint")
    assert (lint["status"], lint["semantic_support"]) == ("ok", "not_scored")
    record = json.loads(Path(out["artifacts"]["record_file"]).read_text())
    stored = record["evidence"][0]["citations"][0]["body_file"]
    assert not stored.startswith("/") and (lab.folder(lab.rid) / stored).is_file()  # stored relative
    assert lab.copy(lab.rid, lab.sid).read_text().startswith("Research sessions can be resumed")


def test_external_report_evidence_is_marked_secondary(lab: Lab) -> None:
    sid = lab.source(lab.rid, "An outside report says sessions resume.", kind="external_report",
                     url="outside-report-1")
    cid = lab.claim(lab.rid, sid, "sessions resume")
    sources = len(lab("research_status", research_id=lab.rid, section="sources")["items"])
    out = lab.write("report", lab.page(claims=[lab.ref(cid)]))
    page = lab("wiki_get", page_id="report")
    assert len(page["evidence"][0]["citations"]) == 1
    assert page["evidence"][0]["citations"][0]["provenance"]["kind"] == "external_report"
    assert "Secondary evidence" in Path(out["artifacts"]["markdown_file"]).read_text()
    assert len(lab("research_status", research_id=lab.rid, section="sources")["items"]) == sources


# --- page shape (scenarios 4-7 and the bad-input list) ---------------------------------


def _sections(lab: Lab, n: int) -> list[dict[str, Any]]:
    return [{"heading": f"H{i}", "text": "t", "claims": [lab.ref()]} for i in range(n)]


BAD_PAGES = [
    ("no claims", lambda lab: lab.page(claims=[]), "claims"),
    ("missing key", lambda lab: {k: v for k, v in lab.page().items() if k != "review"}, "page.review"),
    ("extra key", lambda lab: {**lab.page(), "tags": []}, "page.tags"),
    ("extra section key", lambda lab: lab.page(sections=[{**_sections(lab, 1)[0], "x": 1}]), r"sections\[0\].x"),
    ("extra claim key", lambda lab: lab.page(claims=[{**lab.ref(), "x": 1}]), r"claims\[0\].x"),
    ("extra review key", lambda lab: {**lab.page(), "review": {**lab.page()["review"], "x": 1}}, "review.x"),
    ("review method", lambda lab: {**lab.page(), "review": {**lab.page()["review"], "method": "bot"}}, "method"),
    ("title newline", lambda lab: lab.page(title="two\nlines"), "title"),
    ("17 sections", lambda lab: lab.page(sections=_sections(lab, 17)), "sections"),
    ("13 claims", lambda lab: lab.page(claims=[lab.ref(f"c{i}") for i in range(13)]), "claims"),
    ("25 distinct claims", lambda lab: lab.page(sections=[
        {"heading": f"H{i}", "text": "t", "claims": [lab.ref(f"c{i}a"), lab.ref(f"c{i}b")]} for i in range(13)]),
     "at most 24 distinct claims"),
    ("duplicate claim", lambda lab: lab.page(claims=[lab.ref(), lab.ref()]), "Duplicate claim reference"),
    ("33 links", lambda lab: lab.page(links=[{"page_id": f"p{i}", "relation": "r"} for i in range(33)]), "links"),
    ("duplicate link", lambda lab: lab.page(links=[{"page_id": "a", "relation": "r"}] * 2), "Duplicate Wiki link"),
    ("1 MB section", lambda lab: lab.page(text="x" * 1_000_000), "at most 12000 characters"),
    ("NUL", lambda lab: lab.page(text="a\x00b"), "text"),
    ("bad research id", lambda lab: lab.page(claims=[lab.ref(rid="r-xyz")]), "research_id"),
]


@pytest.mark.parametrize("name,build,message", BAD_PAGES, ids=[b[0] for b in BAD_PAGES])
def test_bad_pages_are_refused_and_nothing_changes(lab: Lab, name: str, build: Any, message: str) -> None:
    lab.write("aurora", lab.page(title="Aurora", kind="entity"))
    before = lab.tree()
    with pytest.raises(BookmarkResearchError, match=message) as info:
        lab.write("sessions", build(lab))
    assert "\n" not in str(info.value) and len(str(info.value)) < 300
    assert lab.tree() == before


@pytest.mark.parametrize("page_id", ["../x", "/abs", "UpperCase", "a" * 81, "", "-lead", "a_b"])
def test_bad_page_ids_are_refused(lab: Lab, page_id: str) -> None:
    with pytest.raises(BookmarkResearchError, match="page_id"):
        lab.write(page_id)
    assert not lab.wiki.exists()


def test_links_must_name_an_existing_different_page(lab: Lab) -> None:
    with pytest.raises(BookmarkResearchError, match=r"^page\.links\[0\]: .*existing different page: nowhere"):
        lab.write("sessions", lab.page(links=[{"page_id": "nowhere", "relation": "x"}]))
    assert not lab.wiki.exists()
    lab.write("sessions")
    before = lab.tree()
    with pytest.raises(BookmarkResearchError, match="existing different page: sessions"):
        lab.write("sessions", lab.page(links=[{"page_id": "sessions", "relation": "self"}]), expected_revision=1)
    assert lab.tree() == before


def test_section_text_may_not_link_outside_the_wiki(lab: Lab) -> None:
    with pytest.raises(BookmarkResearchError, match="links outside the wiki folder"):
        lab.write("sessions", lab.page(text="See [secrets](../../etc/passwd)."))
    assert not lab.wiki.exists()


# --- revisions and history (scenarios 10, 11, 13) ----------------------------------------------


def test_revisions_are_immutable_and_readable(lab: Lab) -> None:
    first = lab.write("aurora", lab.page(title="Aurora", kind="entity"))
    original = lab.page(links=[{"page_id": "aurora", "relation": "implements"}])
    r1 = lab.write("sessions", original)
    files = {k: Path(v).read_bytes() for k, v in r1["artifacts"].items() if k != "view_file"}
    r2 = lab.write("sessions", lab.page(title="Resumable sessions", links=original["links"]), "Rename",
                   expected_revision=1)
    assert r2["revision"] == 2 and first["revision"] == 1
    old = lab("wiki_get", page_id="sessions", revision=1)
    assert old["page"] == original and old["revision"] == 1
    assert {k: Path(r1["artifacts"][k]).read_bytes() for k in files} == files
    assert lab("wiki_get", page_id="sessions")["page"]["title"] == "Resumable sessions"
    with pytest.raises(BookmarkResearchError, match="Unknown Wiki page or revision"):
        lab("wiki_get", page_id="sessions", revision=3)
    with pytest.raises(BookmarkResearchError, match="Unknown Wiki page or revision"):
        lab("wiki_get", page_id="nothing")


def test_a_stale_expected_revision_is_refused(lab: Lab) -> None:
    lab.write("sessions")
    lab.write("sessions", expected_revision=1)
    before = lab.tree()
    with pytest.raises(ConflictError, match="revision changed.*: page sessions is at revision 2, expected_revision was 1$"):
        lab.write("sessions", expected_revision=1)
    with pytest.raises(ConflictError, match="revision changed.*: page sessions is at revision 2, expected_revision was 0$"):
        lab.write("sessions")
    with pytest.raises(ConflictError, match="revision changed.*: page brand-new does not exist; give expected_revision 0"):
        lab.write("brand-new", expected_revision=3)
    assert lab.tree() == before


def test_list_pages_sorted_and_paged(lab: Lab) -> None:
    lab.write("sessions")
    lab.write("aurora", lab.page(title="Aurora", kind="entity"))
    first = lab("wiki_list", limit=1)
    assert ([p["page_id"] for p in first["pages"]], first["next_offset"], first["total"]) == (["aurora"], 1, 2)
    second = lab("wiki_list", offset=1, limit=1)
    assert [p["page_id"] for p in second["pages"]] == ["sessions"] and second["next_offset"] is None


def test_two_concurrent_writes_with_the_same_expected_revision_one_wins(lab: Lab) -> None:
    from bookmark_research.core.app import App
    from bookmark_research.core.registry import run

    lab.write("sessions")
    barrier = threading.Barrier(2)
    outcomes: list[Any] = []

    def attempt(title: str) -> None:
        app = App(lab.core.data_dir)
        barrier.wait()
        try:
            outcomes.append(run(app, "wiki_write", {"page_id": "sessions", "page": lab.page(title=title),
                                                    "change_note": title, "expected_revision": 1}).revision)
        except BookmarkResearchError as exc:
            outcomes.append(exc)
        finally:
            app.close()

    threads = [threading.Thread(target=attempt, args=(t,)) for t in ("First title", "Second title")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(o for o in outcomes if isinstance(o, int)) == [2]
    errors = [o for o in outcomes if not isinstance(o, int)]
    assert len(errors) == 1 and "revision changed" in str(errors[0])
    assert lab("wiki_get", page_id="sessions")["revision"] == 2
    assert lab("wiki_lint")["status"] == "ok"


# --- crash safety (scenario 14) ----------------------------------------------------------------


def test_a_failure_before_index_json_keeps_the_old_revision_and_a_retry_succeeds(lab: Lab,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    lab.write("sessions")
    before = {name: (lab.wiki / name).read_bytes() for name in ("index.json", "log.md", "index.md")}
    record = lab("wiki_get", page_id="sessions")["artifacts"]["record_file"]
    record_bytes = Path(record).read_bytes()
    real = atomic.write_bytes

    def crash(path: Any, data: bytes, **kw: Any) -> None:
        if Path(path).name == "index.json":
            raise OSError(28, "No space left on device")
        real(path, data, **kw)

    monkeypatch.setattr(atomic, "write_bytes", crash)
    with pytest.raises(StorageError, match="index.json: cannot write"):
        lab.write("sessions", lab.page(title="Changed"), "Second", expected_revision=1)
    assert {name: (lab.wiki / name).read_bytes() for name in before} == before
    assert Path(record).read_bytes() == record_bytes
    assert lab("wiki_get", page_id="sessions")["revision"] == 1
    monkeypatch.setattr(atomic, "write_bytes", real)
    assert lab.write("sessions", lab.page(title="Changed"), "Second", expected_revision=1)["revision"] == 2
    assert lab("wiki_lint")["status"] == "ok"
    assert (lab.wiki / "log.md").read_text().count("## [") == 2


# --- the store's limits and safety --------------------------------------------------------------


def test_page_limit(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wiki_store, "MAX_PAGES", 2)
    monkeypatch.setattr("bookmark_research.wiki.write.MAX_PAGES", 2)
    lab.write("one")
    lab.write("two")
    before = lab.tree()
    with pytest.raises(BookmarkResearchError, match="Wiki page limit reached"):
        lab.write("three")
    assert lab.write("two", expected_revision=1)["revision"] == 2  # updates still work
    assert set(lab.tree()) - set(before)  # the update wrote files; the refused page did not
    assert "three" not in json.loads((lab.wiki / "index.json").read_text())["pages"]


def test_an_edited_revision_file_is_refused_on_read(lab: Lab) -> None:
    out = lab.write("sessions")
    record = Path(out["artifacts"]["record_file"])
    record.write_text(record.read_text().replace("Reusable", "Edited"))
    with pytest.raises(BookmarkResearchError, match="hash changed: revisions/sessions/1-.*SHA-256.*restore the file"):
        lab("wiki_get", page_id="sessions")
    before = lab.tree()
    with pytest.raises(BookmarkResearchError, match="hash changed"):
        lab.write("sessions", expected_revision=1)
    assert lab.tree() == before
    md = Path(out["artifacts"]["markdown_file"])
    record.write_text(record.read_text().replace("Edited", "Reusable"))
    md.write_text(md.read_text() + "tampered\n")
    with pytest.raises(BookmarkResearchError, match="Markdown hash changed"):
        lab("wiki_get", page_id="sessions")


@pytest.mark.parametrize("where", ["index.json", "revisions", "pages"])
def test_a_symlink_inside_the_wiki_is_refused(lab: Lab, tmp_path: Path, where: str) -> None:
    lab.write("sessions")
    target = lab.wiki / where
    moved = tmp_path / f"moved-{where}"
    target.rename(moved)
    target.symlink_to(moved)
    before = lab.tree()
    with pytest.raises(BookmarkResearchError, match="symlinks are not allowed"):
        lab.write("sessions", expected_revision=1)
    assert lab.tree() == before


def test_a_wiki_directory_inside_a_canvas_package_is_refused(lab: Lab, demo: Path) -> None:
    with pytest.raises(BookmarkResearchError, match="canvas package"):  # the setting itself is refused ...
        settings.update({"wiki.directory": str(demo / "wiki")}, terminal=True)
    path = settings.settings_path()  # ... and so is a settings file edited by hand
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"wiki": {"directory": str(demo / "wiki")}}))
    with pytest.raises(BookmarkResearchError, match="outside canvas package"):
        lab.write("sessions")
    assert not (demo / "wiki").exists()


def test_the_wiki_directory_follows_the_settings(lab: Lab, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    settings.update({"wiki.directory": str(other)}, terminal=True)
    out = lab.write("sessions")
    assert out["directory"] == str(other) and (other / "index.json").is_file()
    assert lab("wiki_list")["directory"] == str(other)
    settings.update({"wiki.directory": None}, terminal=True)
    assert lab("wiki_list")["directory"] == str(lab.wiki) and lab("wiki_list")["total"] == 0


def test_records_over_the_size_limit_are_refused(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bookmark_research.wiki.write.MAX_RECORD_BYTES", 2000)
    with pytest.raises(BookmarkResearchError, match="exceed 2000 bytes; split the topic"):
        lab.write("sessions")
    assert not (lab.wiki / "index.json").exists()


def test_refused_evidence_leaves_an_existing_wiki_byte_identical(lab: Lab) -> None:
    lab.write("aurora", lab.page(title="Aurora", kind="entity", claims=[lab.ref(lab.cid2)]))
    lab.write("sessions")
    before = lab.tree()
    lab.retract(lab.rid, lab.cid)
    with pytest.raises(BookmarkResearchError, match="retracted claim"):
        lab.write("sessions", expected_revision=1)
    with pytest.raises(BookmarkResearchError, match="retracted claim"):
        lab.write("new-page")
    lab.edit_body(lab.rid, lab.sid, "Edited.")
    with pytest.raises(BookmarkResearchError, match="no longer matches saved evidence"):
        lab.write("aurora", lab.page(title="Aurora", kind="entity", claims=[lab.ref(lab.cid2)]), expected_revision=1)
    assert lab.tree() == before


def test_index_json_and_catalogue_updated_in_place_equal_a_full_rebuild(lab: Lab) -> None:
    """Writes in one process reuse the previous index.json lines and catalogue rows; the files must be
    exactly what sorting every page again gives (new pages between others, a retitled page, a kind change)."""
    import random

    from bookmark_research.wiki import render
    from bookmark_research.wiki.store import Wiki, dump_index

    rng = random.Random(5)
    ids = [f"p-{n}" for n in rng.sample(range(100), 12)]
    revisions: dict[str, int] = {}
    written: list[tuple[str, str]] = []
    for step in range(30):
        page_id = rng.choice(ids)
        page = lab.page(title=rng.choice(["Alpha", "beta", "Gamma", "Ωmega", "测试"]) + f" {step}",
                        kind=rng.choice(["topic", "entity"]))
        lab.write(page_id, page, **({"expected_revision": revisions[page_id]} if page_id in revisions else {}))
        revisions[page_id] = revisions.get(page_id, 0) + 1
        written.append(((lab.wiki / "index.json").read_text("utf-8"), (lab.wiki / "index.md").read_text("utf-8")))
    for index_text, catalog_text in written:  # recomputed only now: this resets the reuse caches
        index = json.loads(index_text)
        assert index_text == dump_index(index) and catalog_text == render.catalog(index)
    assert Wiki(lab.wiki).load_index()["pages"].keys() == set(revisions)


def test_wikilinks_take_a_heading_as_written_and_refuse_an_id_that_cannot_link(lab: Lab) -> None:
    """Obsidian writes [[page#Heading text]]; a capitalised [[Page]] would silently stay text."""
    lab.write("aurora", lab.page(title="Aurora", kind="entity",
                                 sections=[{"heading": "When not to use", "text": "Old.", "claims": [lab.ref()]}]))
    lab.write("sessions", lab.page(text="See [[aurora#When not to use|the caveat]] and [[aurora#when-not-to-use]]."))
    view = (lab.wiki / "pages" / "sessions.md").read_text()
    assert view.count("aurora.md#when-not-to-use)") == 2
    assert [i for i in lab("wiki_lint")["issues"] if i["severity"] != "info"] == []
    before = lab.tree()
    with pytest.raises(BookmarkResearchError,
                       match=r"^page\.sections\[0\]\.text: \[\[Aurora\]\] is not a page link.*\(write \[\[aurora\]\]"):
        lab.write("sessions", lab.page(text="See [[Aurora]]."), expected_revision=1)
    lab.write("sessions", lab.page(text="Code `[[Aurora]]` and escaped \\[\\[Aurora\\]\\] stay text."),
              expected_revision=1)
    assert lab.tree() != before


def test_a_new_wiki_folder_and_its_new_parents_are_fsynced_into_their_parents(lab: Lab, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Found in review: only the wiki folder's immediate parent was fsynced when grandparents were created too."""
    from bookmark_research.wiki import store

    synced: list[Path] = []
    real = atomic.fsync_dir
    monkeypatch.setattr(atomic, "fsync_dir", lambda path: synced.append(Path(path)) or real(path))
    root = tmp_path / "notes" / "deep" / "wiki"
    store.Wiki(root).create()
    assert {tmp_path, tmp_path / "notes", tmp_path / "notes" / "deep", root} <= set(synced)
    assert root.stat().st_mode & 0o777 == 0o700
