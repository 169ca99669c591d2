"""Whole sessions: coverage gates, finish guards, the report, resume, closed sessions, wiki follow-up."""

from __future__ import annotations

import json
import re

import pytest

from bookmark_research.config.settings import update
from bookmark_research.errors import BookmarkResearchError
from tests.research_support import PAGE, PageSite, allow_loopback, claim, record, snapshot, start

OTHER = "Calls may return partial excerpts."


@pytest.fixture
def site():
    allow_loopback()
    with PageSite({"/u0": (200, PAGE, "text/plain"), "/u1": (200, "The second page says: " + OTHER, "text/plain"),
                   "/q2": (200, "Version two adds batch fetch. " + OTHER, "text/plain")}) as s:
        yield s


def fetch(core, rid, op, *urls, question="q1"):
    return core("research_fetch", research_id=rid, operation_id=op, question_id=question, urls=list(urls),
                reuse_archive=False)


def review(core, rid, inventory_id, source, quote, question="q1"):
    return record(core, rid, kind="inventory_review", inventory_id=inventory_id, disposition="reviewed",
                  text="Read the original page", question_ids=[question], source_ids=[source],
                  citations=[{"source_id": source, "quote": quote}])


def test_whole_input_completion_gate_over_a_url_list(core, site):
    u0, u1 = site.base + "/u0", site.base + "/u1"
    out = start(core, [u0, u1, u0], providers=["direct"])
    rid = out["research_id"]
    ids = {e["original_url"]: e["id"] for e in core("research_inventory", research_id=rid)["items"]}
    fetch(core, rid, "f0", u0)
    record(core, rid, kind="source_review", source_id="s1", verdict="accepted", text="Official")
    claim(core, rid, "s1", "the service supports search and fetch.")
    review(core, rid, ids[u0], "s1", "supports search")
    record(core, rid, kind="answer", question_id="q1", answer="Search and fetch.", claim_ids=["c1"])
    cov = core("research_coverage", research_id=rid)
    assert cov["metrics"]["substantive_review"] == {"count": 1, "total": 2, "rate": 0.5} and not cov["completion_ready"]
    with pytest.raises(BookmarkResearchError, match="Research coverage incomplete: Original input URLs still need"):
        core("research_finish", research_id=rid, summary="done")
    fetch(core, rid, "f1", u1)
    record(core, rid, kind="source_review", source_id="s2", verdict="accepted", text="Official")
    review(core, rid, ids[u1], "s2", OTHER)
    cov = core("research_coverage", research_id=rid)
    assert cov["completion_ready"] and cov["metrics"]["substantive_review"]["rate"] == 1.0
    done = core("research_finish", research_id=rid, summary="Both pages read.")
    assert done["status"] == "completed" and set(done["artifacts"]) == {"report", "sources", "state", "context",
                                                                         "coverage", "inventory"}
    folder = core.data_dir / "research" / rid
    coverage_file = folder / json.loads((folder / "state.json").read_text())["artifacts"]["coverage"]
    assert re.fullmatch(r"coverage-[0-9a-f]{24}\.json", coverage_file.name) and coverage_file.exists()
    assert len(json.loads(coverage_file.read_text())["rows"]) == 2
    sources = json.loads((folder / "sources.json").read_text())
    assert [s["id"] for s in sources["sources"]] == ["s1", "s2"] and "rows" not in sources["coverage"]
    report = (folder / "report.md").read_text()
    assert "| Accounted for | 2/2 | 100.0% |" in report and "[c1](#claim-c1)" in report
    assert re.search(r"1\. \[s1\]\(#source-s1\) \(c1\): “the service supports search and fetch\.” — \[saved text\]"
                     r"\(evidence/pages/[0-9a-f]{64}\.txt\)", report)
    for link in re.findall(r"\]\(((?:evidence|coverage|context|inventory)[^)#]*)\)", report):
        assert (folder / link).exists(), link  # every local link resolves inside the session
    with pytest.raises(BookmarkResearchError, match="Research is closed"):
        record(core, rid, kind="gap", question_id="q1", text="late")
    with pytest.raises(BookmarkResearchError, match="Research is closed"):
        fetch(core, rid, "f9", u1)
    assert core("research_report", research_id=rid)["text"] == report


def test_failed_fetch_accounts_but_does_not_cover_and_exclusions_cannot_complete(core, site):
    u0, gone = site.base + "/u0", site.base + "/gone"
    rid = start(core, [u0, gone], providers=["direct"])["research_id"]
    ids = {e["original_url"]: e["id"] for e in core("research_inventory", research_id=rid)["items"]}
    fetch(core, rid, "f", u0, gone)
    cov = core("research_coverage", research_id=rid)
    assert (cov["metrics"]["accounted_for"]["count"], cov["metrics"]["usable_text"]["count"]) == (2, 0)
    record(core, rid, kind="source_review", source_id="s1", verdict="accepted", text="ok")
    claim(core, rid, "s1", "supports search and fetch")
    review(core, rid, ids[u0], "s1", "supports search")
    with pytest.raises(BookmarkResearchError, match="no extracted page text"):
        review(core, rid, ids[gone], "s2", "Not Found")
    with pytest.raises(BookmarkResearchError, match="not substantiated: .*not accepted"):
        record(core, rid, kind="inventory_review", inventory_id=ids[gone], disposition="reviewed", text="read",
               question_ids=["q1"], source_ids=["s2"], claim_ids=["c1"])
    record(core, rid, kind="inventory_review", inventory_id=ids[gone], disposition="blocked", text="404 Not Found")
    record(core, rid, kind="answer", question_id="q1", answer="Search and fetch.", claim_ids=["c1"])
    cov = core("research_coverage", research_id=rid)
    assert cov["metrics"]["accounted_for"]["rate"] == 1.0 and cov["metrics"]["substantive_review"]["rate"] == 0.5
    assert cov["metrics"]["question_completion"]["rate"] == 1.0 and cov["difference_counts"]["blocked"] == 1
    assert core("research_coverage", research_id=rid, filter="blocked")["inventory_ids"] == [ids[gone]]
    with pytest.raises(BookmarkResearchError, match="coverage incomplete"):
        core("research_finish", research_id=rid, summary="x")

    other = start(core, [u0, gone])["research_id"]
    for iid in core("research_inventory", research_id=other)["inventory_ids"]:
        record(core, other, kind="inventory_review", inventory_id=iid, disposition="excluded", text="Not about this",
               reason_code="out_of_scope")
    cov = core("research_coverage", research_id=other)
    assert cov["difference_counts"]["excluded"] == 2 and cov["difference_counts"]["unread"] == 0
    assert cov["metrics"]["accounted_for"]["rate"] == 1.0
    assert "No original input has a substantive, evidence-backed review" in cov["completion_blockers"]


def test_coverage_and_finish_recheck_saved_texts(core, site):
    u0 = site.base + "/u0"
    rid = start(core, [u0], providers=["direct"])["research_id"]
    source = fetch(core, rid, "f", u0)["sources"][0]
    record(core, rid, kind="source_review", source_id="s1", verdict="accepted", text="ok")
    claim(core, rid, "s1", "supports search and fetch")
    review(core, rid, core("research_inventory", research_id=rid)["inventory_ids"][0], "s1", "supports search")
    record(core, rid, kind="answer", question_id="q1", answer="Both.", claim_ids=["c1"])
    assert core("research_coverage", research_id=rid)["completion_ready"]
    folder = core.data_dir / "research" / rid
    (folder / source["body_file"]).write_text(PAGE.replace("fetch", "FETCH"))
    cov = core("research_coverage", research_id=rid)
    assert cov["metrics"]["usable_text"]["count"] == 0 and cov["metrics"]["substantive_review"]["count"] == 0
    assert not cov["completion_ready"]
    before = snapshot(folder)
    for status in ("completed", "incomplete", "cancelled"):
        with pytest.raises(BookmarkResearchError, match="hash changed|coverage incomplete"):
            core("research_finish", research_id=rid, summary="x", status=status)
    assert snapshot(folder) == before


def test_full_iterative_flow_conflicts_and_retractions(core, site):
    rid = start(core, providers=["direct"])["research_id"]  # questions only: no inventory rows
    fetch(core, rid, "r1", site.base + "/u0")
    claim(core, rid, "s1", "the service supports search and fetch.")
    record(core, rid, kind="answer", question_id="q1", answer="Search and fetch.", claim_ids=["c1"])
    record(core, rid, kind="question", id="q2", question="What changed in version two?")
    record(core, rid, kind="gap", question_id="q2", text="Not read yet")
    with pytest.raises(BookmarkResearchError, match="Unanswered research questions remain"):
        core("research_finish", research_id=rid, summary="x")
    fetch(core, rid, "r2", site.base + "/q2", question="q2")
    claim(core, rid, "s2", OTHER, question="q2", confidence="high")
    record(core, rid, kind="answer", question_id="q2", answer="Batch fetch.", claim_ids=["c2"])
    record(core, rid, kind="conflict", claim_ids=["c1", "c2"], text="Partial excerpts vs full fetch")
    with pytest.raises(BookmarkResearchError, match="Unresolved evidence conflicts remain"):
        core("research_finish", research_id=rid, summary="x")
    record(core, rid, kind="resolution", conflict_id="x1", claim_ids=["c2"], text="Excerpts are a fallback only")
    done = core("research_finish", research_id=rid, summary="Done.", limitations=["Only two pages were read"])
    assert done["status"] == "completed" and done["usage"] == {"search_calls": 0, "fetch_calls": 2, "rounds": 0}
    report = (core.data_dir / "research" / rid / "report.md").read_text()
    for text in ("[c1](#claim-c1)", "[c2](#claim-c2)", site.base + "/q2", "unknown completeness",
                 "Excerpts are a fallback only", "- Only two pages were read", "### Source s2"):
        assert text in report
    assert done["wiki_follow_up"]["policy"] == "suggest" and done["wiki_follow_up"]["candidates"] == []
    assert done["wiki_follow_up"]["eligible_claim_ids"] == []  # no source was accepted
    assert done["wiki_follow_up"]["terms"]


def test_rejected_source_report_keeps_the_retracted_claim(core, site):
    rid = start(core, providers=["direct"])["research_id"]
    fetch(core, rid, "a", site.base + "/u0")
    claim(core, rid, "s1", "supports search and fetch")
    record(core, rid, kind="source_review", source_id="s1", verdict="rejected", text="Outdated page")
    with pytest.raises(BookmarkResearchError, match="rejected"):
        core("research_finish", research_id=rid, summary="x", status="incomplete")  # c1 still cites it
    record(core, rid, kind="retraction", claim_id="c1", text="Source rejected")
    fetch(core, rid, "b", site.base + "/u1")
    record(core, rid, kind="source_review", source_id="s2", verdict="accepted", text="Current")
    claim(core, rid, "s2", OTHER)
    record(core, rid, kind="answer", question_id="q1", answer="Excerpts.", claim_ids=["c2"])
    done = core("research_finish", research_id=rid, summary="ok")
    assert done["wiki_follow_up"]["eligible_claim_ids"] == ["c2"]
    report = (core.data_dir / "research" / rid / "report.md").read_text()
    c1 = report[report.index("### Claim c1"):report.index("### Claim c2")]
    assert "status: retracted" in c1 and "Retracted: Source rejected" in c1 and "> supports search and fetch" in c1
    assert "Content review: rejected — Outdated page" in report


def test_resume_keeps_the_earlier_report_and_budget(core, site):
    rid = start(core, providers=["direct"], budget={"max_fetch_calls": 2})["research_id"]
    fetch(core, rid, "f1", site.base + "/u0")
    claim(core, rid, "s1", "supports search and fetch")
    record(core, rid, kind="gap", question_id="q1", text="Need a second source")
    core("research_finish", research_id=rid, summary="Paused", status="incomplete")
    folder = core.data_dir / "research" / rid
    earlier = {name: (folder / name).read_bytes() for name in ("report.md", "sources.json", "state.json")}
    with pytest.raises(BookmarkResearchError, match="incomplete report; use research_record kind=resume"):
        record(core, rid, kind="gap", question_id="q1", text="x")
    entries = [{"kind": "gap", "question_id": "q1", "text": "again"}]
    with pytest.raises(BookmarkResearchError, match="incomplete"):
        core("research_record", research_id=rid, entries=entries, batch_id="late")
    resumed = record(core, rid, kind="resume", text="A second source was found")
    snap = resumed["recorded"]["previous_artifacts"]
    for key, name in (("report", "report.md"), ("sources", "sources.json"), ("state", "state.json")):
        assert (folder / snap[key]).read_bytes() == earlier[name]
    status = core("research_status", research_id=rid)
    assert status["status"] == "active" and status["artifacts"] is None and status["usage"]["fetch_calls"] == 1
    assert status["questions"][0]["gap"] == "Need a second source"
    assert fetch(core, rid, "f1", site.base + "/u0")["replayed"] is True
    assert fetch(core, rid, "f2", site.base + "/u1")["sources"][0]["id"] == "s2"
    with pytest.raises(BookmarkResearchError, match="budget exhausted"):
        fetch(core, rid, "f3", site.base + "/q2")
    claim(core, rid, "s2", OTHER)
    record(core, rid, kind="answer", question_id="q1", answer="Both.", claim_ids=["c1", "c2"])
    done = core("research_finish", research_id=rid, summary="Done")
    assert done["status"] == "completed"
    report = (folder / "report.md").read_text()
    assert f"[Previous incomplete report]({snap['report']}): A second source was found" in report
    with pytest.raises(BookmarkResearchError, match="Only an incomplete report can be resumed"):
        record(core, rid, kind="resume", text="again")


def test_batch_replays_work_after_finish_and_incomplete_without_evidence(core):
    rid = start(core, budget={"max_search_calls": 0, "max_fetch_calls": 0})["research_id"]
    entries = [{"kind": "gap", "question_id": "q1", "text": "Nothing could be read"}]
    first = core("research_record", research_id=rid, entries=entries, batch_id="b1")
    done = core("research_finish", research_id=rid, summary="Could not read anything", status="incomplete")
    folder = core.data_dir / "research" / rid
    before = snapshot(folder)
    core.reopen()
    again = core("research_record", research_id=rid, entries=entries, batch_id="b1")
    assert again == {**first, "replayed": True} and snapshot(folder) == before
    with pytest.raises(BookmarkResearchError, match="different entries"):
        core("research_record", research_id=rid, entries=entries * 2, batch_id="b1")
    report = (folder / "report.md").read_text()
    assert "No supported answer recorded." in report and "Nothing could be read" in report
    assert done["claims"] == [] and done["status"] == "incomplete"


def test_wiki_follow_up_policy_off(core):
    update({"wiki.after_research": "off"}, terminal=False)
    rid = start(core)["research_id"]
    record(core, rid, kind="gap", question_id="q1", text="none")
    assert core("research_finish", research_id=rid, summary="x", status="cancelled")["wiki_follow_up"] == {
        "policy": "off"}
