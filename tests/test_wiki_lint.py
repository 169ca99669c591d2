"""wiki_lint: the reference's rules, the new ones (each firing and not firing), and parsed link checks."""

from __future__ import annotations

import posixpath
from pathlib import Path

import pytest

from bookmark_research.errors import NotFoundError
from bookmark_research.wiki.markdown import outline
from tests.wiki_support import Lab, lab  # noqa: F401


def _issues(result: dict, code: str) -> list[dict]:
    return [i for i in result["issues"] if i["code"] == code]


def _codes(result: dict) -> list[str]:
    """Issue codes other than the (informational) orphan pages of these small wikis."""
    return [i["code"] for i in result["issues"] if i["code"] != "orphan_page"]


def test_a_clean_linked_wiki_lints_clean(lab: Lab) -> None:
    lab.write("aurora", lab.page(title="Aurora", kind="entity", text="Aurora is the engine. See [[sessions]]."))
    lab.write("sessions", lab.page(links=[{"page_id": "aurora", "relation": "runs on"}]))
    lint = lab("wiki_lint")
    assert lint["status"] == "ok" and lint["pages_checked"] == 2
    assert lint["issues"] == []  # every page linked (structured or prose), no duplicates, catalogue fresh


def test_orphan_page(lab: Lab) -> None:
    lab.write("aurora", lab.page(title="Aurora", kind="entity"))
    lab.write("sessions", lab.page(links=[{"page_id": "aurora", "relation": "runs on"}]))
    orphans = _issues(lab("wiki_lint"), "orphan_page")
    assert [(i["page_id"], i["severity"]) for i in orphans] == [("sessions", "info")]
    lab.write("aurora", lab.page(title="Aurora", kind="entity", text="Used by [[sessions]]."), expected_revision=1)
    assert _issues(lab("wiki_lint"), "orphan_page") == []


def test_broken_prose_link(lab: Lab) -> None:
    lab.write("sessions", lab.page(text="See [[aurora]], [the engine](aurora.md#history) and [a file](assets/x.png)."))
    lint = lab("wiki_lint")
    broken = _issues(lint, "broken_prose_link")
    assert lint["status"] == "error"
    assert sorted(i["target"] for i in broken) == ["assets/x.png", "aurora", "aurora"]
    assert _issues(lint, "broken_relative_link") == [
        i for i in lint["issues"] if i["code"] == "broken_relative_link" and "assets/x.png" in i["target"]]
    lab.write("aurora", lab.page(title="Aurora", kind="entity",
                                 sections=[{"heading": "History", "text": "Old.", "claims": [lab.ref()]}]))
    (lab.wiki / "assets").mkdir()
    (lab.wiki / "assets" / "x.png").write_bytes(b"png")
    lint = lab("wiki_lint")
    assert _issues(lint, "broken_prose_link") == [] and lint["status"] == "ok"
    lab.write("aurora", lab.page(title="Aurora", kind="entity"), expected_revision=1)  # heading gone
    messages = [i["message"] for i in _issues(lab("wiki_lint"), "broken_prose_link")]
    assert messages == ["Section text links to a heading that does not exist: aurora#history"]


def test_duplicate_topic(lab: Lab) -> None:
    lab.write("sessions", lab.page(title="Reusable Sessions"))
    lab.write("sessions-2", lab.page(title="Sessions (reusable)"))
    assert _issues(lab("wiki_lint"), "duplicate_topic") == []
    lab.write("sessions-3", lab.page(title="  reusable   SESSIONS! "))
    dupes = _issues(lab("wiki_lint"), "duplicate_topic")
    assert [(i["page_id"], i["severity"], i["duplicates"]) for i in dupes] == \
        [("sessions-3", "warning", ["sessions", "sessions-3"])]


def test_catalog_missing_stale_and_regenerated(lab: Lab) -> None:
    lab.write("sessions")
    lab.write("aurora", lab.page(title="Aurora [core]", kind="entity"), "Create entity\nsecond line")
    lab.write("sessions", lab.page(title="Reusable sessions"), "Rename", expected_revision=1)
    index_md = (lab.wiki / "index.md").read_text()
    assert "\r" not in index_md and "## Topics (1)" in index_md and "## Entities (1)" in index_md
    assert "[Reusable sessions](pages/sessions.md) `sessions` · r2 · " in index_md
    assert "· 1 claims — Sessions 可恢复 after a crash." in index_md and "Aurora \\[core\\]" in index_md
    log = (lab.wiki / "log.md").read_text()
    assert log.startswith("# Wiki log") and log.count("\n## [") == 3
    assert "change_note: Create entity second line" in log
    (lab.wiki / "index.md").unlink()
    lint = lab("wiki_lint")
    assert lint["status"] == "ok" and _codes(lint) == ["catalog_missing"]
    (lab.wiki / "index.md").write_text("# edited\n")
    assert _codes(lab("wiki_lint")) == ["catalog_stale"]
    lab.write("sessions", expected_revision=2)
    assert _codes(lab("wiki_lint")) == [] and (lab.wiki / "log.md").read_text().count("\n## [") == 4


def test_current_view_missing_or_stale(lab: Lab) -> None:
    out = lab.write("sessions")
    view = Path(out["artifacts"]["view_file"])
    assert not [i for i in lab("wiki_lint")["issues"] if i["code"].startswith("view_")]
    view.write_text(view.read_text() + "edited\n")
    assert [i["code"] for i in lab("wiki_lint")["issues"]] == ["view_stale"]
    view.unlink()
    assert [i["code"] for i in lab("wiki_lint")["issues"]] == ["view_missing"]
    lab.write("sessions", expected_revision=1)
    assert lab("wiki_lint")["issues"] == []


def test_an_edited_evidence_copy_is_an_error(lab: Lab) -> None:
    lab.write("sessions")
    copy = lab.copy(lab.rid, lab.sid)
    copy.write_text("changed")
    lint = lab("wiki_lint")
    assert lint["status"] == "error" and "copy of saved evidence changed" in lint["issues"][0]["message"]
    lab.write("sessions", expected_revision=1)  # the next write restores the verified copy
    assert lab("wiki_lint")["status"] == "ok"


def test_every_relative_link_in_every_rendered_file_resolves(lab: Lab) -> None:
    lab.write("aurora", lab.page(title="Aurora", kind="entity", text="# Evidence 1\n\nA heading that collides."))
    lab.write("sessions", lab.page(links=[{"page_id": "aurora", "relation": "uses"}], text="See [[aurora]]."))
    lab.write("sessions", lab.page(links=[{"page_id": "aurora", "relation": "uses"}]), expected_revision=1)
    files = sorted(p for p in lab.wiki.rglob("*.md"))
    assert len(files) == 3 + 2 + 1 + 1  # revisions, current views, index.md and log.md
    checked = 0
    for path in files:
        rel = path.relative_to(lab.wiki).as_posix()
        headings, links = outline(path.read_text())
        for href, _line in links:
            if href.startswith(("http://", "https://")):
                continue
            target, _, anchor = href.partition("#")
            resolved = (lab.wiki / posixpath.dirname(rel) / target).resolve() if target else path
            assert resolved.is_file(), (rel, href)
            assert lab.wiki in resolved.parents
            if anchor:
                assert anchor in {a for _, _, a in outline(resolved.read_text())[0]}, (rel, href)
            checked += 1
    assert checked > 20
    # the evidence anchors skip the author's colliding "Evidence 1" heading, as GitHub numbers them
    aurora = (lab.wiki / "pages/aurora.md").read_text()
    assert "(#evidence-1-1)" in aurora


def test_broken_relative_links_are_found_by_parsing(lab: Lab) -> None:
    out = lab.write("sessions")
    lab.copy(lab.rid, lab.sid, "manifest_file").unlink()
    view = Path(out["artifacts"]["view_file"])
    lint = lab("wiki_lint")
    broken = _issues(lint, "broken_relative_link")
    assert lint["status"] == "error" and len(broken) == 2  # the revision file and the current view
    assert all("manifest.json" in i["target"] and "does not exist" in i["message"] for i in broken)
    assert view.exists()


def test_lint_of_an_unknown_page_and_of_an_empty_wiki(lab: Lab) -> None:
    assert lab("wiki_lint") == {**lab("wiki_lint"), "status": "ok", "pages_checked": 0, "issues": []}
    with pytest.raises(NotFoundError, match="Unknown Wiki page: nothing"):  # not a lint finding
        lab("wiki_lint", page_id="nothing")


@pytest.mark.parametrize("text", ["```\nunclosed fence", "<script>\nalert(1)", "<!-- open comment",
                                  "# Title\n\n## Evidence\n\n### Evidence 1", "stray ] and [ and ](", "[[", "> quote\n==="])
def test_section_text_cannot_break_the_page_structure(lab: Lab, text: str) -> None:
    out = lab.write("sessions", lab.page(sections=[
        {"heading": "First", "text": text, "claims": [lab.ref()]},
        {"heading": "Second", "text": "Plain.", "claims": [lab.ref(lab.cid2)]}]))
    for path in (out["artifacts"]["markdown_file"], out["artifacts"]["view_file"]):
        headings, _ = outline(Path(path).read_text())
        top = [(level, title) for level, title, _ in headings if level <= 2]
        assert top == [(1, "Reusable sessions"), (2, "First"), (2, "Second"), (2, "Evidence"), (2, "Update record")]
        assert [t for level, t, _ in headings if level == 3][-2:] == ["Evidence 1", "Evidence 2"]
    assert lab("wiki_lint")["status"] == "ok"


def test_a_cold_full_lint_shares_the_parsing_with_a_helper_process(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from bookmark_research.wiki import cache, lint, outline_worker

    lab.write("aurora", lab.page(title="Aurora", kind="entity", text="# Evidence 1\n\nSee [[sessions#resuming]]."))
    lab.write("sessions", lab.page(links=[{"page_id": "aurora", "relation": "uses"}], text="See [[aurora]]."))
    lab.write("sessions", lab.page(links=[{"page_id": "aurora", "relation": "uses"}]), expected_revision=1)
    (lab.wiki / "pages/aurora.md").write_text((lab.wiki / "pages/aurora.md").read_text() + "\n[gone](nowhere.md)\n")
    serial = lab("wiki_lint")
    assert len(_issues(serial, "broken_relative_link")) == 1

    shutil.rmtree(lab.wiki / ".cache")
    cache.clear()
    helped: list[int] = []
    results = outline_worker.Helper.results

    def spy(self: outline_worker.Helper) -> dict:
        found = results(self)
        helped.append(len(found))
        return found

    monkeypatch.setattr(lint, "HELPER_MIN_FILES", 1)
    monkeypatch.setattr(lint, "cores", lambda: 2)
    monkeypatch.setattr(outline_worker.Helper, "results", spy)
    assert lab("wiki_lint") == serial
    assert helped and helped[0] >= 2  # the helper process parsed its share of the current files
    assert (lab.wiki / ".cache" / "outlines.sqlite3").is_file()

    helped.clear()
    monkeypatch.setattr(outline_worker.sys, "executable", "/nonexistent/python")
    shutil.rmtree(lab.wiki / ".cache")
    assert lab("wiki_lint") == serial  # no helper: this process parses everything
    assert helped == [0]


def test_a_broken_link_fixed_by_a_later_revision_leaves_only_a_warning(lab: Lab) -> None:
    """Revisions never change: a link that broke in history is a warning once the current revision is fixed."""
    lab.write("aurora", lab.page(title="Aurora", kind="entity",
                                 sections=[{"heading": "When not to use", "text": "Old.", "claims": [lab.ref()]}]))
    lab.write("sessions", lab.page(text="See [the caveat](aurora#when-not-to-use) and [a file](assets/x.png)."))
    lab.write("aurora", lab.page(title="Aurora", kind="entity",  # the heading is renamed on the other page
                                 sections=[{"heading": "Caveats", "text": "Old.", "claims": [lab.ref()]}]),
              expected_revision=1)
    lint = lab("wiki_lint", page_id="sessions")
    assert lint["status"] == "error"  # the current revision's links are broken: errors
    lab.write("sessions", lab.page(text="See [the caveat](aurora#caveats)."), expected_revision=1)
    lint = lab("wiki_lint")
    history = _issues(lint, "broken_relative_link")
    assert lint["status"] == "ok" and [i["severity"] for i in lint["issues"] if i["severity"] == "error"] == []
    assert {i["severity"] for i in history} == {"warning"} and all(i["superseded"] for i in history)
    assert {i["file"].split("/")[-1][:2] for i in history} == {"1-"}  # both from sessions revision 1
    assert sorted(i["target"].rsplit("/", 1)[-1] for i in history) == ["aurora.md#when-not-to-use", "x.png"]


def test_a_changed_evidence_copy_makes_the_page_stale_everywhere_reported_once(lab: Lab) -> None:
    lab.write("aurora", lab.page(title="Aurora", kind="entity", text="See [[sessions]]."))
    lab.write("sessions", lab.page(claims=[lab.ref(), lab.ref(lab.cid2)], text="Used by [[aurora]]."))  # one source
    lab.copy(lab.rid, lab.sid).write_text("changed")
    assert lab("wiki_get", page_id="sessions")["validation"]["status"] == "stale"
    assert lab("wiki_search", query="sessions")["excluded_stale_pages"] >= 1
    lint = lab("wiki_lint")
    changed = [i for i in lint["issues"] if "copy of saved evidence changed" in i["message"]]
    assert {i["page_id"] for i in changed} >= {"sessions"}
    assert len([i for i in changed if i["page_id"] == "sessions"]) == 1  # two citations of one file: one issue
    assert _issues(lint, "orphan_page") == []


def test_an_edited_old_revision_keeps_the_page_links_counted(lab: Lab) -> None:
    lab.write("aurora", lab.page(title="Aurora", kind="entity", text="See [[sessions]]."))
    lab.write("sessions", lab.page(text="Used by [[aurora]]."))
    lab.write("aurora", lab.page(title="Aurora", kind="entity", text="See [[sessions]] again."), expected_revision=1)
    old = next((lab.wiki / "revisions" / "aurora").glob("1-*.md"))
    old.write_text(old.read_text() + "\nedited\n")
    lint = lab("wiki_lint")
    assert [i["code"] for i in lint["issues"]] == ["artifact_error"]  # no spurious orphan_page for sessions


def test_the_outline_helper_does_not_import_modules_from_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found in review: ``python -m`` put the working directory first on the child's sys.path."""
    import hashlib

    from bookmark_research.wiki.outline_worker import Helper

    marker = tmp_path / "ran"
    (tmp_path / "json.py").write_text(f"open({str(marker)!r}, 'w').write('x')\nraise SystemExit(3)\n")
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "page.md"
    target.write_bytes(b"# Title\n\n[a](b.md)\n")
    sha = hashlib.sha256(target.read_bytes()).hexdigest()
    found = Helper([(str(target), sha), (str(target), "0" * 64)], 1_000).results()
    assert not marker.exists(), "the child ran ./json.py from the current directory"
    assert found == {sha: (["title"], [("b.md", 3)])}  # parsed, and only under the hash asked for


def test_the_helper_skips_an_oversized_or_changed_file_and_lint_holds_one_file_at_a_time(
        lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found in review: a 4.8 MB tampered revision was read whole and parsed before its hash check."""
    import json
    import shutil

    from bookmark_research.wiki import cache, lint, outline_worker
    from bookmark_research.wiki.store import MAX_MARKDOWN_BYTES

    lab.write("aurora", lab.page(title="Aurora", kind="entity"))
    pointer = json.loads((lab.wiki / "index.json").read_text())["pages"]["aurora"]
    tampered = lab.wiki / pointer["markdown_file"]
    tampered.write_bytes(b"# Tampered\n\n" + b"- [x](y.md)\n" * 400_000)
    assert tampered.stat().st_size > MAX_MARKDOWN_BYTES
    shutil.rmtree(lab.wiki / ".cache")  # a cold lint
    cache.clear()
    parsed: list[int] = []
    real_outline_of = lint.outline_of
    monkeypatch.setattr(lint, "outline_of", lambda data: parsed.append(len(data)) or real_outline_of(data))
    seen: list[dict] = []
    results = outline_worker.Helper.results
    monkeypatch.setattr(outline_worker.Helper, "results", lambda self: seen.append(r := results(self)) or r)
    monkeypatch.setattr(lint, "HELPER_MIN_FILES", 1)
    monkeypatch.setattr(lint, "HELPER_SHARE", 1.0)
    monkeypatch.setattr(lint, "cores", lambda: 2)
    out = lab("wiki_lint")
    assert "artifact_error" in [i["code"] for i in out["issues"] if i["severity"] == "error"]
    assert seen and pointer["markdown_sha256"] not in seen[0] and len(seen[0]) == 1  # only the intact view
    assert all(size <= MAX_MARKDOWN_BYTES for size in parsed)  # nothing over the cap parsed here either


def test_a_fifo_in_the_wiki_folder_does_not_hang_a_read(lab: Lab) -> None:
    import os

    lab.write("aurora", lab.page(title="Aurora", kind="entity"))
    view = lab.wiki / "pages" / "aurora.md"
    view.unlink()
    os.mkfifo(view)
    lint = lab("wiki_lint")  # returns (a blocking open would hang here)
    assert [(i["code"], i["file"]) for i in lint["issues"] if i["severity"] == "error"] == [
        ("artifact_error", "pages/aurora.md")]
    assert "not a regular file" in _issues(lint, "artifact_error")[0]["message"]


def test_a_symlinked_pages_folder_is_an_error_not_a_regenerable_view(lab: Lab, tmp_path: Path) -> None:
    lab.write("aurora", lab.page(title="Aurora", kind="entity"))
    (lab.wiki / "pages").rename(tmp_path / "pages")
    (lab.wiki / "pages").symlink_to(tmp_path / "pages")
    lint = lab("wiki_lint")
    assert _issues(lint, "view_missing") == []  # "the next write regenerates it" would be false: writes refuse
    errors = _issues(lint, "artifact_error")
    assert len(errors) == 1 and "symlinks are not allowed" in errors[0]["message"]
