"""Pages whose evidence changed say so: stale pages, input freshness, acknowledge, carry-forward, reopen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bookmark_research.errors import BookmarkResearchError
from tests.wiki_support import Lab, lab  # noqa: F401


def _codes(result: dict) -> list[str]:
    return [i["code"] for i in result["validation"]["issues"]]


@pytest.mark.parametrize("change", ["reject", "retract", "edit body", "review wording only"])
def test_evidence_changes_make_the_page_stale_and_hide_it_from_search(lab: Lab, change: str) -> None:
    lab.write("sessions")
    if change == "reject":
        lab.review(lab.rid, lab.sid, "rejected")
    elif change == "retract":
        lab.retract(lab.rid, lab.cid)
    elif change == "edit body":
        lab.edit_body(lab.rid, lab.sid, "The page now says something else.")
    else:
        lab.review(lab.rid, lab.sid, "accepted", text="Re-read; still fine")
    page = lab("wiki_get", page_id="sessions")
    found = lab("wiki_search", query="可恢复")
    if change == "review wording only":  # review text is not substantive evidence
        assert page["validation"]["status"] == "current" and found["total"] == 1
        return
    assert page["validation"]["status"] == "stale" and _codes(page) == ["invalid_evidence"]
    assert lab("wiki_lint")["status"] == "error"
    assert (found["total"], found["excluded_stale_pages"], found["excluded_page_ids"]) == (0, 1, ["sessions"])


def test_a_changed_artifact_hash_makes_the_page_stale(lab: Lab) -> None:
    lab.write("sessions")
    response = lab.artifact(lab.rid, lab.sid, "response_file")
    response.write_text(response.read_text() + " ")
    page = lab("wiki_get", page_id="sessions")
    assert page["validation"]["status"] == "stale"
    assert "changed since this revision" in page["validation"]["issues"][0]["message"]


def test_tampering_with_the_page_itself(lab: Lab) -> None:
    out = lab.write("sessions")
    md = Path(out["artifacts"]["markdown_file"])
    md.write_text(md.read_text() + "\nextra\n")
    with pytest.raises(BookmarkResearchError, match="Markdown hash changed"):
        lab("wiki_get", page_id="sessions")
    found = lab("wiki_search", query="可恢复")
    assert (found["total"], found["excluded_stale_pages"]) == (0, 1)
    assert lab("wiki_lint")["issues"][0]["code"] == "artifact_error"


def test_tampering_with_an_older_revision_is_an_artifact_error(lab: Lab) -> None:
    first = lab.write("sessions")
    lab.write("sessions", expected_revision=1)
    old = Path(first["artifacts"]["record_file"])
    old.write_text(old.read_text().replace("Create page", "Edited note"))
    lint = lab("wiki_lint")
    assert lint["status"] == "error"
    assert [(i["page_id"], i["code"]) for i in lint["issues"]] == [("sessions", "artifact_error")]
    assert "hash changed" in lint["issues"][0]["message"]


def test_a_linked_page_with_a_newer_revision_is_a_warning(lab: Lab) -> None:
    lab.write("aurora", lab.page(title="Aurora", kind="entity"))
    lab.write("sessions", lab.page(links=[{"page_id": "aurora", "relation": "uses"}]))
    lab.write("aurora", lab.page(title="Aurora", kind="entity"), expected_revision=1)
    lint = lab("wiki_lint", page_id="sessions")
    assert lint["status"] == "ok"
    newer = [i for i in lint["issues"] if i["code"] == "link_has_newer_revision"]
    assert [(i["linked_revision"], i["current_revision"]) for i in newer] == [(1, 2)]
    assert lab("wiki_get", page_id="sessions")["validation"]["status"] == "current"


def test_a_missing_linked_revision_file_is_an_error(lab: Lab) -> None:
    target = lab.write("aurora", lab.page(title="Aurora", kind="entity"))
    lab.write("sessions", lab.page(links=[{"page_id": "aurora", "relation": "uses"}]))
    Path(target["artifacts"]["markdown_file"]).unlink()
    codes = [i["code"] for i in lab("wiki_lint", page_id="sessions")["issues"]]
    assert "missing_link_artifact" in codes


# --- input freshness and acknowledgement (scenarios 22-29) ----------------------------------------


def test_changed_input_needs_review_then_reviewed_input_version_makes_it_current(lab: Lab) -> None:
    lab.write("sessions")
    v2 = lab.resync("A new bookmark")
    page = lab("wiki_get", page_id="sessions")
    assert page["validation"]["status"] == "needs_review" and _codes(page) == ["source_input_changed"]
    assert lab("wiki_lint")["status"] == "ok"
    found = lab("wiki_search", query="可恢复")
    assert found["total"] == 1 and found["results"][0]["validation"]["status"] == "needs_review"
    with pytest.raises(BookmarkResearchError, match="reviewed_input_version does not match"):
        lab.write("sessions", expected_revision=1, reviewed_input_version="0" * 64)
    out = lab.write("sessions", expected_revision=1, reviewed_input_version=v2)
    assert out["revision"] == 2 and [(a["research_id"], a["input_version"]) for a in out["acknowledged"]] == \
        [(lab.rid, v2)]
    assert lab("wiki_get", page_id="sessions")["validation"]["status"] == "current"


def test_acknowledge_carry_forward_and_reopen(lab: Lab) -> None:
    lab.write("sessions")
    v2 = lab.resync("A new bookmark")
    acked = lab("wiki_acknowledge", page_id="sessions", note="Re-read the re-synced bookmarks")
    assert acked["revision"] == 2 and acked["acknowledged_note"] == "Re-read the re-synced bookmarks"
    assert acked["unacknowledged"] == []
    page = lab("wiki_get", page_id="sessions")
    assert page["validation"]["status"] == "current" and _codes(page) == ["source_change_acknowledged"]
    assert page["validation"]["issues"][0]["severity"] == "info"
    assert page["page"]["review"]["note"] == "Re-read the re-synced bookmarks"
    assert page["acknowledged"][0]["note"] == "Re-read the re-synced bookmarks"
    assert page["page"]["sections"] == lab("wiki_get", page_id="sessions", revision=1)["page"]["sections"]
    assert page["change_note"].startswith("Reviewed against the current input: ")
    # a wording edit carries the acknowledgement forward
    edited = lab.write("sessions", lab.page(text="Sessions 可恢复 after any crash."), "Wording", expected_revision=2)
    assert [a["input_version"] for a in edited["acknowledged"]] == [v2]
    assert lab("wiki_get", page_id="sessions")["validation"]["status"] == "current"
    # a further change of the input reopens the review
    lab.resync("Yet another bookmark")
    assert lab("wiki_get", page_id="sessions")["validation"]["status"] == "needs_review"
    assert lab.write("sessions", expected_revision=3)["acknowledged"] == []


def test_removed_input_stays_needs_review_after_acknowledging(lab: Lab) -> None:
    lab.write("sessions")
    lab.remove_input()
    page = lab("wiki_get", page_id="sessions")
    assert page["validation"]["status"] == "needs_review" and _codes(page) == ["source_input_unavailable"]
    acked = lab("wiki_acknowledge", page_id="sessions", note="Looked")
    assert acked["revision"] == 2 and acked["acknowledged"] == []  # the reference writes the revision anyway ...
    assert [u["research_id"] for u in acked["unacknowledged"]] == [lab.rid]  # ... and here it says what it could not
    assert "stays needs_review" in acked["unacknowledged"][0]["reason"]
    assert lab("wiki_get", page_id="sessions")["validation"]["status"] == "needs_review"


def test_acknowledge_refuses_invalid_evidence(lab: Lab) -> None:
    lab.write("sessions")
    lab.resync("A new bookmark")
    response = lab.artifact(lab.rid, lab.sid, "response_file")
    response.write_text(response.read_text() + " ")
    before = lab.tree()
    with pytest.raises(BookmarkResearchError, match="invalid evidence"):
        lab("wiki_acknowledge", page_id="sessions", note="Looked")
    assert lab.tree() == before and lab("wiki_get", page_id="sessions")["revision"] == 1


def test_acknowledge_checks_again_inside_the_lock(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    """Evidence altered between the first read and the locks is caught too."""
    from bookmark_research.wiki import write

    lab.write("sessions")
    lab.resync("A new bookmark")
    response = lab.artifact(lab.rid, lab.sid, "response_file")
    real = write.Evidence.require
    calls = []

    def require(self, refs):  # the pre-check passes; the manifest is edited before the locked re-check
        calls.append(1)
        out = real(self, refs)
        if len(calls) == 1:
            response.write_text(response.read_text() + " ")
        return out

    monkeypatch.setattr(write.Evidence, "require", require)
    with pytest.raises(BookmarkResearchError, match="invalid evidence"):
        lab("wiki_acknowledge", page_id="sessions", note="Looked")
    assert lab("wiki_get", page_id="sessions")["revision"] == 1


def test_carry_forward_drops_acknowledgements_of_sessions_no_longer_cited(lab: Lab) -> None:
    other = lab.session()
    sid = lab.source(other, "Another page about sessions.")
    cid = lab.claim(other, sid, "Another page")
    lab.write("sessions", lab.page(claims=[lab.ref(), lab.ref(cid, other)]))
    lab.resync("A new bookmark")  # both sessions froze the same source
    out = lab("wiki_acknowledge", page_id="sessions", note="Both reviewed")
    assert sorted(a["research_id"] for a in out["acknowledged"]) == sorted([lab.rid, other])
    out = lab.write("sessions", expected_revision=2)  # no longer cites the other session
    assert [a["research_id"] for a in out["acknowledged"]] == [lab.rid]
    record = json.loads(Path(out["artifacts"]["record_file"]).read_text())
    assert record["acknowledged"] == out["acknowledged"]


def test_remembered_checks_notice_every_change(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claim checks and verified reads are reused only while every file they came from is unchanged."""
    from bookmark_research.wiki import cache

    monkeypatch.setattr(cache, "SETTLE_SECONDS", -1.0)  # trust files at once (normally: settled for 2 s)
    cache.clear()
    calls: list[str] = []
    from bookmark_research.research import api

    real = api.claim_evidence
    monkeypatch.setattr(api, "claim_evidence", lambda app, rid, cid: calls.append(cid) or real(app, rid, cid))
    out = lab.write("sessions")
    calls.clear()
    assert lab("wiki_get", page_id="sessions")["validation"]["status"] == "current"
    assert lab("wiki_get", page_id="sessions")["validation"]["status"] == "current"
    assert len(calls) <= 1  # the second read reuses the first one's check
    body = lab.artifact(lab.rid, lab.sid)
    lab.edit_body(lab.rid, lab.sid, body.read_text().replace("Research", "Reseerch"))  # same size: only the file
    assert lab("wiki_get", page_id="sessions")["validation"]["status"] == "stale"
    lab.edit_body(lab.rid, lab.sid, body.read_text().replace("Reseerch", "Research"))
    assert lab("wiki_get", page_id="sessions")["validation"]["status"] == "current"
    lab.retract(lab.rid, lab.cid)
    assert lab("wiki_get", page_id="sessions")["validation"]["status"] == "stale"
    record = Path(out["artifacts"]["record_file"])
    record.write_text(record.read_text().replace("Reusable", "Rewired!"))
    with pytest.raises(BookmarkResearchError, match="hash changed"):
        lab("wiki_get", page_id="sessions")
