"""research_record and research_import_evidence: kinds, cascades, all-or-nothing batches, imports."""

from __future__ import annotations

import json
import threading

import pytest

from bookmark_research.core.app import App
from bookmark_research.core.registry import run
from bookmark_research.errors import BookmarkResearchError
from bookmark_research.research.ids import inventory_id
from tests.research_support import PAGE, claim, imported, record, snapshot, start

U0, U1 = "https://example.org/zero", "https://example.org/one"
QUOTE = "the service supports search and fetch."


@pytest.fixture
def session(core):
    out = start(core, [U0, U1])
    imported(core, out["research_id"], "imp-1", U0)
    return out


def test_quote_must_exist_and_hash_must_match(core, session):
    rid, folder = session["research_id"], session["directory"]
    before = snapshot(folder)
    with pytest.raises(BookmarkResearchError, match=r"Quote is absent from saved source s1; closest passage in s1: "
                                                    r"\"Current docs: the service supports search"):
        claim(core, rid, "s1", "Current docs: the service supports searching and fetching.")
    assert snapshot(folder) == before  # nothing recorded, files byte-identical
    assert claim(core, rid, "s1", QUOTE)["id"] == "c1"
    body = next((core.data_dir / "research" / rid / "evidence").rglob("body.txt"))
    body.write_text(PAGE.replace("search", "SEARCH"))
    for call in (lambda: core("research_source", research_id=rid, source_id="s1"),
                 lambda: claim(core, rid, "s1", "Calls may return")):
        with pytest.raises(BookmarkResearchError, match="Saved source hash changed"):
            call()
    cov = core("research_coverage", research_id=rid)
    assert any("hash changed" in i for q in cov["questions"] for i in q["issues"]) is False  # q1 not answered yet
    record(core, rid, kind="answer", question_id="q1", answer="Search and fetch.", claim_ids=["c1"])
    cov = core("research_coverage", research_id=rid)
    assert any("hash changed" in i for i in cov["questions"][0]["issues"])


def test_rejected_source_reopens_answers_and_retraction_keeps_history(core, session):
    rid = session["research_id"]
    claim(core, rid, "s1", QUOTE)
    record(core, rid, kind="answer", question_id="q1", answer="It supports search and fetch.", claim_ids=["c1"])
    review = record(core, rid, kind="source_review", source_id="s1", verdict="rejected", text="Wrong product page")
    assert review["recorded"]["review"]["verdict"] == "rejected"
    q1 = core("research_status", research_id=rid)["questions"][0]
    assert q1["status"] == "unresolved" and "rejected" in q1["gap"] and q1["answer"] == "It supports search and fetch."
    with pytest.raises(BookmarkResearchError, match="rejected during content review: s1"):
        claim(core, rid, "s1", QUOTE)
    with pytest.raises(BookmarkResearchError, match="Claim cites a rejected source"):
        record(core, rid, kind="answer", question_id="q1", answer="again", claim_ids=["c1"])
    record(core, rid, kind="retraction", claim_id="c1", text="Cited a rejected page")
    with pytest.raises(BookmarkResearchError, match="Retracted claims cannot support"):
        record(core, rid, kind="answer", question_id="q1", answer="again", claim_ids=["c1"])
    imported(core, rid, "imp-2", U1, text="Calls may return partial excerpts.")
    record(core, rid, kind="source_review", source_id="s2", verdict="accepted", text="Official docs")
    assert claim(core, rid, "s2", "Calls may return partial excerpts.", confidence="high")["id"] == "c2"
    record(core, rid, kind="answer", question_id="q1", answer="Partial excerpts.", claim_ids=["c2"])
    status = core("research_status", research_id=rid)
    assert status["questions"][0]["claim_ids"] == ["c2"] and status["questions"][0]["status"] == "answered"
    assert [c["status"] for c in status["claims"]] == ["retracted", "active"]
    assert status["claims"][0]["citations"][0]["quote"] == QUOTE  # history kept
    record(core, rid, kind="question", id="q2", question="Another?")
    with pytest.raises(BookmarkResearchError, match="Answer claims must belong to this question"):
        record(core, rid, kind="answer", question_id="q2", answer="x", claim_ids=["c2"])


def test_conflicts_resolutions_and_reopening(core, session):
    rid = session["research_id"]
    claim(core, rid, "s1", QUOTE)
    claim(core, rid, "s1", "Calls may return partial excerpts.")
    assert record(core, rid, kind="conflict", claim_ids=["c1", "c2"], text="They disagree")["id"] == "x1"
    with pytest.raises(BookmarkResearchError, match="claim_ids must be 2"):
        record(core, rid, kind="conflict", claim_ids=["c1"], text="one")
    with pytest.raises(BookmarkResearchError, match="Unknown conflict: x9"):
        record(core, rid, kind="resolution", conflict_id="x9", claim_ids=["c2"], text="r")
    record(core, rid, kind="resolution", conflict_id="x1", claim_ids=["c2"], text="c2 is newer")
    assert core("research_status", research_id=rid)["conflicts"][0]["status"] == "resolved"
    record(core, rid, kind="retraction", claim_id="c2", text="wrong")
    conflict = core("research_status", research_id=rid)["conflicts"][0]
    assert conflict["status"] == "open" and conflict["resolution"]["claim_ids"] == ["c2"]


def test_unknown_kinds_fields_and_limits(core, session):
    rid, folder = session["research_id"], session["directory"]
    before = snapshot(folder)
    cases = [({"kind": "opinion", "text": "x"}, "kind: Unknown research entry kind 'opinion' \\(one of claim, answer"),
             ({"kind": "gap", "question_id": "q1", "text": "x", "extra": 1}, "Unknown fields of a gap entry: extra"),
             ({"kind": "claim", "question_id": "q1", "statement": "s", "bogus": 1, "citations": []},
              "Unknown fields of a claim entry: bogus \\(a claim takes citations, question_id, statement; optional "),
             ({"kind": "claim", "question_id": "q1", "statement": "s", "citations": [
                 {"source_id": "s1", "quote": "Current docs"}, {"source_id": "s1", "quote": " "}]},
              r"citations\[1\]: quote: A quote must be 1 to 4000 characters"),
             ({"kind": "claim", "question_id": "q1", "statement": "s", "citations": [{"source_id": "s1", "quote": "a"}]},
              r"citations\[0\]: quote: A quote must carry at least 8 characters"),
             ({"kind": "claim", "question_id": "q1", "statement": "s", "citations": [{"source_id": "s1", "quote": "..."}]},
              r"citations\[0\]: quote: A quote must carry"),
             ({"kind": "gap", "question_id": "q1"}, "gap needs text"),
             ({"kind": "gap", "question_id": "q9", "text": "x"}, "Unknown question: q9"),
             ({"kind": "claim", "question_id": "q1", "statement": "s", "citations": []}, "1 to 12 citations"),
             ({"kind": "claim", "question_id": "q1", "statement": "s",
               "citations": [{"source_id": "s1", "quote": QUOTE, "page": 1}]}, "source_id and quote only"),
             ({"kind": "claim", "question_id": "q1", "statement": "s", "confidence": "sure",
               "citations": [{"source_id": "s1", "quote": QUOTE}]}, "Invalid confidence"),
             ({"kind": "claim", "question_id": "q1", "statement": "s",
               "citations": [{"source_id": "s7", "quote": QUOTE}]}, "Unknown source: s7"),
             ({"kind": "source_review", "source_id": "s1", "verdict": "great", "text": "x"}, "verdict must be"),
             ({"kind": "question", "id": "q1", "question": "dup"}, "Question id already exists"),
             ({"kind": "interruption", "operation_id": "imp-1", "text": "x"}, "Only an interrupted pending"),
             ({"kind": "inventory_review", "inventory_id": "u-nope", "disposition": "reviewed", "text": "x"},
              "Unknown inventory item"),
             ]
    for entry, match in cases:
        with pytest.raises(BookmarkResearchError, match=match):
            core("research_record", research_id=rid, entry=entry)
    for args, match in [({}, "exactly one of entry or entries"), ({"entry": {}, "entries": []}, "exactly one"),
                        ({"entries": []}, "entries must be a list of 1 to 50"),
                        ({"entries": {}}, "entries"), ({"entries": [{"kind": "gap"}] * 51}, "entries"),
                        ({"entries": [None]}, r"entries\[0\]: entry must be an object"),
                        ({"entry": {"kind": "gap", "question_id": "q1", "text": "x"}, "batch_id": "b"},
                         "batch_id is only supported with entries"),
                        ({"entries": [{"kind": "gap", "question_id": "q1", "text": "x"}], "batch_id": "../bad"},
                         "batch_id"),
                        ({"entries": [{"kind": "resume", "text": "x"}]}, "single entry"),
                        ({"entries": [{"kind": "external_run", "id": "e", "provider": "p", "run_id": "r",
                                       "status": "pending", "text": "t"}]}, "single entry")]:
        with pytest.raises(BookmarkResearchError, match=match):
            core("research_record", research_id=rid, **args)
    assert snapshot(folder) == before


def test_atomic_ordered_batch_and_failure_saves_nothing(core, session):
    rid, folder = session["research_id"], session["directory"]
    entries = [{"kind": "source_review", "source_id": "s1", "verdict": "accepted", "text": "ok"},
               {"kind": "claim", "question_id": "q1", "statement": "s", "citations": [{"source_id": "s1", "quote": QUOTE}]},
               {"kind": "question", "id": "q2", "question": "Second?"},
               {"kind": "gap", "question_id": "q2", "text": "Not covered by the inputs"}]
    bad = entries + [{"kind": "gap", "question_id": "q1", "text": "a"}, {"kind": "gap", "question_id": "q1", "text": "b"},
                     {"kind": "claim", "question_id": "q1", "statement": "s",
                      "citations": [{"source_id": "s1", "quote": "not in the page at all"}]}]
    before = snapshot(folder)
    with pytest.raises(BookmarkResearchError, match=r"entries\[6\]: citations\[0\]: Quote is absent.*no entries were saved"):
        core("research_record", research_id=rid, entries=bad)
    assert snapshot(folder) == before
    out = core("research_record", research_id=rid, entries=entries)
    assert [(r["index"], r["kind"], r["id"]) for r in out["results"]] == [
        (0, "source_review", "s1"), (1, "claim", "c1"), (2, "question", "q2"), (3, "gap", "q2")]
    assert QUOTE not in json.dumps(out)
    status = core("research_status", research_id=rid)
    assert status["questions"][1]["status"] == "unresolved"
    events = core("research_status", research_id=rid, section="events")["items"]
    assert [e["kind"] for e in events] == ["source_review", "claim", "question", "gap"]


def test_batch_id_replays_and_concurrent_identical_batches(core, session, tmp_path):
    rid = session["research_id"]
    entries = [{"kind": "claim", "question_id": "q1", "statement": "s", "citations": [{"source_id": "s1", "quote": QUOTE}]}]
    results = []

    def go() -> None:
        with App(core.data_dir) as app:
            results.append(run(app, "research_record", {"research_id": rid, "entries": entries,
                                                        "batch_id": "same"}).model_dump(mode="json"))

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r["replayed"] for r in results) == [False, True, True, True]
    assert {r["results"][0]["id"] for r in results} == {"c1"}
    with pytest.raises(BookmarkResearchError, match="batch_id already used with different entries"):
        core("research_record", research_id=rid, entries=entries * 2, batch_id="same")
    assert core("research_record", research_id=rid, entries=entries, batch_id="other")["results"][0]["id"] == "c2"
    core.reopen()
    assert core("research_record", research_id=rid, entries=entries, batch_id="same")["replayed"] is True
    assert len(core("research_status", research_id=rid)["claims"]) == 2


def test_large_batch_response_is_compact(core, session):
    rid = session["research_id"]
    review = "x" * 3600
    out = core("research_record", research_id=rid,
               entries=[{"kind": "source_review", "source_id": "s1", "verdict": "uncertain", "text": review}] * 50)
    assert out["count"] == 50 and len(json.dumps(out)) < 6000
    state = json.loads((core.data_dir / "research" / rid / "state.json").read_text())
    assert len(state["events"]) == 50 and "record_batches" not in state


def test_import_evidence_sources_replays_and_concurrent_imports(core):
    out = start(core, [U0, U1])
    rid = out["research_id"]
    first = imported(core, rid, "imp-a", U0, title="Docs")
    source = first["source"]
    assert (source["id"], source["review"]["verdict"], source["content_kind"], source["possibly_truncated"]) == (
        "s1", "unreviewed", "imported_page_text", True)
    assert source["retrieved_at"] == "2026-11-30T10:00:00Z" and source["inventory_ids"] == [inventory_id(U0)]
    assert core("research_status", research_id=rid)["usage"] == {"search_calls": 0, "fetch_calls": 0, "rounds": 0}
    again = imported(core, rid, "imp-a", U0, title="Docs")
    assert again["replayed"] is True and again["source"] == source
    with pytest.raises(BookmarkResearchError, match="different arguments"):
        imported(core, rid, "imp-a", U0, text="Other text")
    page = core("research_source", research_id=rid, source_id="s1", limit=8)
    rest = core("research_source", research_id=rid, source_id="s1", offset=page["next_offset"], limit=50_000)
    assert page["text"] + rest["text"] == PAGE and rest["next_offset"] is None

    def go(op: str, url: str) -> None:
        with App(core.data_dir) as app:
            run(app, "research_import_evidence", {"research_id": rid, "operation_id": op, "question_id": "q1",
                                                  "url": url, "text": f"text of {op}", "provenance": {"kind": "page"}})

    threads = [threading.Thread(target=go, args=(f"imp-{i}", U1)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    state = core("research_status", research_id=rid, section="sources")["items"]
    assert [s["id"] for s in state] == ["s1", "s2", "s3", "s4"]
    folder = core.data_dir / "research" / rid
    for s in state:
        manifest = json.loads((folder / s["manifest_file"]).read_text())
        assert manifest["source"] == s  # written at commit, with the final id


def test_import_validation(core):
    out = start(core, [U0, U1])
    rid = out["research_id"]
    other = out["source_scope"]["selected_inventory_ids"]
    for kw, match in [({"url": "ftp://example.org/x"}, "http"), ({"url": "https://u:p@example.org/"}, "credentials"),
                      ({"provenance": {"kind": "rumour"}}, "provenance"),
                      ({"provenance": {"kind": "page", "text_sha256": "0" * 64}}, "does not match provenance"),
                      ({"question": "q9"}, "Unknown question: q9"),
                      ({"inventory_ids": ["u-nope"]}, "Unknown inventory item"),
                      ({"url": U0, "inventory_ids": [i for i in other]}, "does not match the selected original"),
                      ({"text": ""}, "text")]:
        with pytest.raises(BookmarkResearchError, match=match):
            imported(core, rid, "imp-x", kw.pop("url", U0), **kw)
    with pytest.raises(BookmarkResearchError, match="operation_id"):
        imported(core, rid, "../escape", U0)
    assert core("research_status", research_id=rid)["operations"] == []


def test_external_report_does_not_count_for_coverage(core):
    out = start(core, [U0, U1])
    rid, ids = out["research_id"], out["source_scope"]["selected_inventory_ids"]
    imported(core, rid, "ext", "external:fixture-report", text="The report says both pages were read.",
             provenance={"kind": "external_report", "provider": "codex"}, inventory_ids=ids)
    record(core, rid, kind="source_review", source_id="s1", verdict="accepted", text="Looks right")
    cov = core("research_coverage", research_id=rid)
    assert cov["metrics"]["usable_text"]["count"] == 0 and cov["metrics"]["substantive_review"]["count"] == 0
    claim(core, rid, "s1", "both pages were read")
    with pytest.raises(BookmarkResearchError, match="not substantiated: .*external report does not establish"):
        record(core, rid, kind="inventory_review", inventory_id=ids[0], disposition="reviewed", text="read",
               question_ids=["q1"], source_ids=["s1"], claim_ids=["c1"])


def test_inventory_reviews_excluded_blocked_and_reviewed(core):
    out = start(core, [U0, U1])
    rid, ids = out["research_id"], out["source_scope"]["selected_inventory_ids"]
    url_of = {e["id"]: e["original_url"] for e in core("research_inventory", research_id=rid)["items"]}
    imported(core, rid, "imp", url_of[ids[0]])
    with pytest.raises(BookmarkResearchError, match="reason_code=out_of_scope or non_content"):
        record(core, rid, kind="inventory_review", inventory_id=ids[1], disposition="excluded", text="n/a")
    record(core, rid, kind="inventory_review", inventory_id=ids[1], disposition="excluded", text="A login page",
           reason_code="non_content")
    again = record(core, rid, kind="inventory_review", inventory_id=ids[1], disposition="excluded",
                   text="A login page", reason_code="non_content")
    assert again["replayed"] is True
    with pytest.raises(BookmarkResearchError, match="not accepted after content review"):
        record(core, rid, kind="inventory_review", inventory_id=ids[0], disposition="reviewed", text="read",
               question_ids=["q1"], source_ids=["s1"], citations=[{"source_id": "s1", "quote": QUOTE}])
    record(core, rid, kind="source_review", source_id="s1", verdict="accepted", text="ok")
    reviewed = record(core, rid, kind="inventory_review", inventory_id=ids[0], disposition="reviewed", text="read",
                      question_ids=["q1"], source_ids=["s1"], citations=[{"source_id": "s1", "quote": QUOTE}])
    assert reviewed["recorded"]["citations"][0]["match"] == "exact"
    cov = core("research_coverage", research_id=rid)
    assert cov["difference_counts"] == {"missing": 0, "unread": 0, "unreviewed": 0, "blocked": 0, "excluded": 1,
                                        "reviewed": 1}
    assert core("research_coverage", research_id=rid, filter="excluded")["inventory_ids"] == [ids[1]]


def test_external_runs_block_completion_until_observed(core, tmp_path):
    out = start(core)
    rid = out["research_id"]
    run_id = "er-" + "a" * 24
    base = {"kind": "external_run", "id": run_id, "provider": "openai", "run_id": run_id, "text": "Deep research"}
    record(core, rid, **{**base, "status": "prepared"})
    record(core, rid, **{**base, "status": "pending"})
    assert "An external run still has a pending or unknown outcome" in core(
        "research_coverage", research_id=rid)["completion_blockers"]
    with pytest.raises(BookmarkResearchError, match="cannot return to prepared"):
        record(core, rid, **{**base, "status": "prepared"})
    for bad in ("trun_abc", "../x", "resp_"):
        with pytest.raises(BookmarkResearchError, match="another provider or run_id"):
            record(core, rid, **{**base, "run_id": bad, "status": "completed"})
    with pytest.raises(BookmarkResearchError, match="single entry"):
        core("research_record", research_id=rid, entries=[{**base, "status": "completed"}])
    artifact = tmp_path / "result.md"
    artifact.write_text("# external result\n")
    done = record(core, rid, **{**base, "run_id": "resp_abc123", "status": "completed",
                                "result": {"answer": "42"}, "artifact_path": str(artifact)})["recorded"]
    assert done["result_file"].startswith("external-runs/") and done["artifact_sha256"]
    again = record(core, rid, **{**base, "run_id": "resp_abc123", "status": "completed", "result": {"answer": "42"},
                                 "artifact_path": str(artifact)})
    assert again["replayed"] is True
    with pytest.raises(BookmarkResearchError, match="another provider or run_id"):
        record(core, rid, **{**base, "run_id": "resp_other", "status": "completed"})
    assert not any("external run" in b for b in core("research_coverage", research_id=rid)["completion_blockers"])
    (core.data_dir / "research" / rid / done["result_file"]).write_text("{}\n")
    record(core, rid, kind="gap", question_id="q1", text="n/a")
    with pytest.raises(BookmarkResearchError, match="Saved external result artifact hash changed"):
        core("research_finish", research_id=rid, summary="x", status="incomplete")


def test_lock_contention_is_a_clear_busy_error(core, session, monkeypatch):
    from bookmark_research.research import api, store

    monkeypatch.setattr(store, "LOCK_TIMEOUT", 0.2)
    with api.session_lock(core.app, session["research_id"]):
        with pytest.raises(BookmarkResearchError, match="Research task is being written by another process"):
            record(core, session["research_id"], kind="gap", question_id="q1", text="x")
