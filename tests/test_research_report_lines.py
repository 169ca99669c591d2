"""What the report, the coverage file and the terminal say about a session (QA B9, B10 and papercuts)."""

from __future__ import annotations

import json

import pytest

from bookmark_research.errors import BookmarkResearchError
from tests.conftest import run_cli
from tests.research_support import PAGE, claim, imported, record, start

URL = "https://docs.example/service"


def ready(core, **kw) -> str:
    """A session over one URL, read by import, reviewed, quoted and answered: ready to finish completed."""
    rid = start(core, [URL], **kw)["research_id"]
    imported(core, rid, "i1", URL)
    record(core, rid, kind="source_review", source_id="s1", verdict="accepted", text="The official page")
    claim(core, rid, "s1", "the service supports search and fetch.")
    record(core, rid, kind="answer", question_id="q1", answer="Search and fetch.", claim_ids=["c1"])
    inventory_id = core("research_inventory", research_id=rid)["items"][0]["id"]
    record(core, rid, kind="inventory_review", inventory_id=inventory_id, disposition="reviewed", text="Read",
           question_ids=["q1"], source_ids=["s1"], claim_ids=["c1"])
    return rid


def test_a_gap_stays_in_the_report_after_a_later_answer(core):
    rid = ready(core)
    record(core, rid, kind="gap", question_id="q1", text="late: the rate limits are not documented")
    record(core, rid, kind="answer", question_id="q1", answer="Search and fetch, revisited", claim_ids=["c1"])
    record(core, rid, kind="gap", question_id="q1", text="still unsure about batching")
    record(core, rid, kind="answer", question_id="q1", answer="Search and fetch, final", claim_ids=["c1"])
    done = core("research_finish", research_id=rid, summary="s")
    folder = core.data_dir / "research" / rid
    report = (folder / "report.md").read_text()
    assert "Gaps recorded earlier (superseded by a later answer or gap):" in report
    assert "- late: the rate limits are not documented (" in report and "- still unsure about batching (" in report
    assert "Unresolved:" not in report
    rows = json.loads((folder / done["artifacts"]["coverage"].split("/")[-1]).read_text())["questions"]
    assert [g["text"] for g in rows[0]["recorded_gaps"]] == ["late: the rate limits are not documented",
                                                             "still unsure about batching"]
    assert {g["status"] for g in rows[0]["recorded_gaps"]} == {"superseded"}


def test_an_open_gap_is_reported_as_unresolved_once(core):
    rid = start(core, [URL])["research_id"]
    record(core, rid, kind="gap", question_id="q1", text="first try failed")
    record(core, rid, kind="gap", question_id="q1", text="nothing could be read")
    core("research_finish", research_id=rid, summary="s", status="incomplete")
    report = (core.data_dir / "research" / rid / "report.md").read_text()
    assert report.count("Unresolved: nothing could be read") == 1 and "- first try failed (" in report


def test_bookmark_refs_without_subset_say_they_only_mark_focus(core, demo):
    """QA B10: one --bookmark-ref froze the whole source and only the JSON showed why."""
    core.sync(demo, source_id="demo")
    probe = core("research_start", brief="b", questions=[{"id": "q1", "question": "q"}], source_ids=["demo"])
    instance = core("research_inventory", research_id=probe["research_id"])["items"][0]["instances"][0]
    ref = ("demo", instance["section_id"], instance["item_id"])
    proc = run_cli("research", "start", "--brief", "ref test", "-q", "q1=x", "--bookmark-ref", *ref,
                   data_dir=core.data_dir)
    assert proc.returncode == 0, proc.stderr
    assert "whole source; 1 bookmark as focus; use --scope-mode subset to narrow the scope to them" in proc.stdout
    out = core("research_start", brief="b", questions=[{"id": "q1", "question": "q"}],
               bookmark_refs=[dict(zip(("source_id", "section_id", "item_id"), ref))])
    assert out["source_scope"]["mode"] == "whole" and "scope_mode subset" in out["source_scope"]["focus_note"]
    narrowed = run_cli("research", "start", "--brief", "ref test", "-q", "q1=x", "--bookmark-ref", *ref,
                       "--scope-mode", "subset", data_dir=core.data_dir)
    assert narrowed.returncode == 0 and "as focus" not in narrowed.stdout and "scope: subset · 1/" in narrowed.stdout


def test_failed_reads_say_why_and_loopback_costs_nothing(core):
    """Papercuts 3, 4, 5, 21: a failed source shows its error (terminal and report), a claim on it names the
    citation and the source, a budget refusal says what the step needs, and a loopback URL the direct fetcher
    refuses is refused before any budget."""
    from tests.research_support import PageSite, allow_loopback

    with PageSite({}) as site:
        url = site.base + "/missing"
        rid = start(core, [url, site.base + "/other"], providers=["direct"], budget={"max_fetch_calls": 1})["research_id"]
        with pytest.raises(BookmarkResearchError, match=r"urls\[0\]: http://127\.0\.0\.1:\d+/missing is a private, "
                                                         r"loopback or link-local address.*nothing was reserved"):
            core("research_fetch", research_id=rid, operation_id="f0", question_id="q1", urls=[url])
        assert core("research_status", research_id=rid)["usage"]["fetch_calls"] == 0
        allow_loopback()
        with pytest.raises(BookmarkResearchError, match=r"budget exhausted: fetch_calls \(this step needs 2, 1 left\)"):
            core("research_fetch", research_id=rid, operation_id="f1", question_id="q1",
                 urls=[url, site.base + "/other"])
        failed = core("research_fetch", research_id=rid, operation_id="f2", question_id="q1", urls=[url])
    assert failed["status"] == "error" and failed["error"] == "direct: no usable page text (not_found (HTTP 404))"
    reason = "not_found (HTTP 404)"
    shown = run_cli("research", "source", rid, "s1", data_dir=core.data_dir)
    assert shown.returncode == 0 and f"not read: {reason}" in shown.stderr
    with pytest.raises(BookmarkResearchError, match=r"citations\[0\]: source s1: Source has no extracted page text"):
        claim(core, rid, "s1", "Not Found at all here")
    core("research_finish", research_id=rid, summary="s", status="incomplete")
    report = (core.data_dir / "research" / rid / "report.md").read_text()
    assert f"Not read: {reason}" in report


def test_status_pages_events_operations_and_a_finished_overview_read_plainly(core):
    """Papercuts 7, 8, 9, 10."""
    rid = ready(core)
    d = core.data_dir
    empty = run_cli("research", "status", rid, "--section", "conflicts", data_dir=d)
    assert empty.stdout.strip() == "conflicts: none"
    past = run_cli("research", "status", rid, "--section", "claims", "--offset", "50", data_dir=d)
    assert past.stdout.strip() == "claims: none at offset 50 (1 in all)"
    events = run_cli("research", "status", rid, "--section", "events", data_dir=d).stdout
    assert "{'" not in events and "source_review" in events and "s1 accepted: The official page" in events
    ops = run_cli("research", "status", rid, "--section", "operations", data_dir=d).stdout
    assert "i1  import_evidence ok · reserved nothing" in ops
    record(core, rid, kind="inventory_review", inventory_id=core("research_inventory", research_id=rid)["items"][0]["id"],
           disposition="excluded", reason_code="out_of_scope", text="Not about the service")
    core("research_finish", research_id=rid, summary="Cancelled after one page", status="cancelled")
    overview = run_cli("research", "status", rid, data_dir=d).stdout
    assert "ready to finish" not in overview and "report: " in overview and "cancelled" in overview
    report = (d / "research" / rid / "report.md").read_text()
    assert "Input: a plain URL list" in report and "None" not in report.split("## Research questions")[0]
    assert "Budget used (reserved before each request, never refunded): search calls 0/16 · fetch calls 0/13" in report
    assert "## Inputs excluded or blocked" in report and f"{URL} — excluded (out_of_scope): Not about the service" in report
    questions_only = start(core)["research_id"]
    record(core, questions_only, kind="gap", question_id="q1", text="nothing")
    core("research_finish", research_id=questions_only, summary="s", status="cancelled")
    assert "Input: questions only (no bookmarks)" in (d / "research" / questions_only / "report.md").read_text()


@pytest.mark.parametrize("policy", ["suggest", "auto"])
def test_the_wiki_follow_up_never_asks_for_what_cannot_be_done(core, policy):
    """Papercut 11: no eligible claim means nothing to write; otherwise the policy's instruction."""
    from bookmark_research.config.settings import update

    update({"wiki.after_research": policy}, terminal=True)
    nothing = start(core)["research_id"]
    record(core, nothing, kind="gap", question_id="q1", text="none")
    follow = core("research_finish", research_id=nothing, summary="s", status="cancelled")["wiki_follow_up"]
    assert follow["eligible_claim_ids"] == [] and follow["instruction"].startswith("No claim is eligible")
    rid = ready(core)
    follow = core("research_finish", research_id=rid, summary="s")["wiki_follow_up"]
    assert follow["eligible_claim_ids"] == ["c1"]
    assert follow["instruction"].startswith({"suggest": "Show the user", "auto": "Write the eligible claims"}[policy])


def test_finish_offers_wiki_pages_that_match_the_session_as_candidates(core):
    """research_finish's wiki_follow_up lists existing wiki pages found by the session's distinctive terms."""
    rid = ready(core)
    page = {"title": "Service capabilities", "kind": "topic", "links": [],
            "sections": [{"heading": "Search and fetch", "text": "What the service supports.",
                          "claims": [{"research_id": rid, "claim_id": "c1"}]}],
            "review": {"method": "human", "reviewer": "tester", "note": "checked"}}
    core("wiki_write", page_id="service", page=page, change_note="Create page")
    follow = core("research_finish", research_id=rid, summary="s")["wiki_follow_up"]
    assert follow["terms"] and [c["page_id"] for c in follow["candidates"]] == ["service"]
    assert set(follow["candidates"][0]["matched_terms"]) <= set(follow["terms"])



def test_a_removed_source_is_named_as_removed(core, demo):
    """Papercut 14 (the research side): freshness names a frozen source that was removed from the index."""
    core.sync(demo, source_id="gone")
    rid = core("research_start", brief="b", questions=[{"id": "q1", "question": "q"}], source_ids=["gone"])["research_id"]
    core("source_remove", source_id="gone", confirm=True)
    fresh = core("research_status", research_id=rid)["source_freshness"]
    assert fresh["state"] == "changed" and fresh["removed_source_ids"] == ["gone"]
    shown = run_cli("research", "status", rid, data_dir=core.data_dir)
    assert "source gone was removed from the index since this session froze it" in shown.stdout
