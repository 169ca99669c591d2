"""A finished research session becomes an evaluation run whose coverage uses frozen inventory ids."""

from __future__ import annotations

import copy
import json
import types
from pathlib import Path
from typing import Any

import pytest

from bookmark_research.errors import InvalidInputError
from bookmark_research.evaluation import from_session
from bookmark_research.evaluation.evaluate import evaluate
from bookmark_research.evaluation.from_session import run_from_state, save_run
from tests.evaluation_data import example

LABELS = {"system_id": "host-agent", "mode": "workflow", "comparison_group": "session-check"}


def session_state() -> dict[str, Any]:
    """A finished session in the research state.json shape (schema 2), written for this test."""
    accepted = {"verdict": "accepted", "text": "read in full"}
    return {
        "schema_version": 2, "research_id": "r-00000000000000aa", "status": "completed",
        "brief": "What do the saved mill pages say?", "created_at": "2026-11-30T10:00:00Z",
        "finished_at": "2026-11-30T10:03:30Z", "providers": ["exa"], "search_fallback_providers": [],
        "fetch_providers": ["direct", "jina", "exa"],
        "budget": {"max_search_calls": 16, "max_fetch_calls": 12, "max_rounds": 8},
        "usage": {"search_calls": 2, "fetch_calls": 3, "rounds": 2},
        "source_scope": {"mode": "whole", "input_version": "in-v1",
                         "selected_inventory_ids": ["u-1", "u-2", "u-3", "u-4", "u-5"]},
        "inventory": [{"id": f"u-{i}", "original_url": f"https://mill.example/{i}"} for i in range(1, 6)],
        "sources": [
            {"id": "s1", "url": "https://mill.example/1", "canonical_url": "https://mill.example/1", "sha256": "a" * 64,
             "extraction_status": "extracted", "evidence_kind": "page", "review": accepted, "inventory_ids": ["u-1"]},
            {"id": "s2", "url": "https://mill.example/2", "sha256": None, "extraction_status": "failed",
             "evidence_kind": "page", "review": {"verdict": "unreviewed", "text": None}, "inventory_ids": ["u-2"]},
            {"id": "s3", "url": "https://mill.example/3", "sha256": "c" * 64, "extraction_status": "extracted",
             "evidence_kind": "page", "review": {"verdict": "rejected", "text": "a parked domain"},
             "inventory_ids": ["u-3"]},
            {"id": "s4", "url": "external:report", "sha256": "d" * 64, "extraction_status": "extracted",
             "evidence_kind": "external_report", "review": accepted, "inventory_ids": [],
             "referenced_inventory_ids": ["u-5"]},
            {"id": "s5", "url": "https://mill.example/5", "sha256": "e" * 64, "extraction_status": "extracted",
             "evidence_kind": "page", "review": {"verdict": "unreviewed", "text": None}, "inventory_ids": ["u-5"]},
        ],
        "inventory_reviews": [
            {"id": "u-1", "inventory_id": "u-1", "disposition": "reviewed", "text": "answers q1"},
            {"id": "u-4", "inventory_id": "u-4", "disposition": "excluded", "reason_code": "non_content", "text": "login"},
        ],
        "questions": [
            {"id": "q1", "question": "What drives the mill?", "status": "answered", "answer": "A water wheel.",
             "claim_ids": ["c1", "c3"], "gap": None},
            {"id": "q2", "question": "Who owns it?", "status": "unresolved", "answer": None, "claim_ids": [],
             "gap": "No page says."},
        ],
        "claims": [
            {"id": "c1", "question_id": "q1", "statement": "A water wheel drives the mill.", "status": "active",
             "citations": [{"source_id": "s1", "quote": "the wheel turns", "source_sha256": "a" * 64},
                           {"source_id": "s1", "quote": "driven by water", "source_sha256": "a" * 64}]},
            {"id": "c2", "question_id": "q1", "statement": "A parked page.", "status": "retracted",
             "citations": [{"source_id": "s3", "quote": "parked", "source_sha256": "c" * 64}]},
            {"id": "c3", "question_id": "q1", "statement": "The wheel is undershot.", "status": "active",
             "citations": [{"source_id": "s1", "quote": "undershot", "source_sha256": "a" * 64},
                           {"source_id": "s5", "quote": "an undershot wheel", "source_sha256": "e" * 64}]},
        ],
    }


def test_run_from_state() -> None:
    out = run_from_state(session_state(), "# Report\n", **LABELS, model="host-model-x")
    run = out["run"]
    assert (run["run_id"], run["task_id"], run["status"], run["repeat"]) == ("r-00000000000000aa",) * 2 + ("completed", 1)
    assert run["answers"] == [{"answer_id": "q1", "text": "A water wheel."}]
    assert [c["claim_id"] for c in run["claims"]] == ["c1", "c3"]  # c2 was retracted
    assert run["citations"] == [
        {"citation_id": "c1.1", "claim_id": "c1", "source_id": "s1", "quote": "the wheel turns […] driven by water",
         "research_id": "r-00000000000000aa", "url": "https://mill.example/1", "source_sha256": "a" * 64},
        {"citation_id": "c3.1", "claim_id": "c3", "source_id": "s1", "quote": "undershot",
         "research_id": "r-00000000000000aa", "url": "https://mill.example/1", "source_sha256": "a" * 64},
        {"citation_id": "c3.2", "claim_id": "c3", "source_id": "s5", "quote": "an undershot wheel",
         "research_id": "r-00000000000000aa", "url": "https://mill.example/5", "source_sha256": "e" * 64},
    ]
    # u-1 reviewed with accepted text; u-2 a failed fetch (accounted only); u-3 rejected (accounted only);
    # u-4 excluded by review (accounted only); u-5 text not yet accepted (accounted only; the external
    # report s4 links no inventory id).
    assert run["coverage"] == {"accounted_source_ids": ["u-1", "u-2", "u-3", "u-4", "u-5"],
                               "text_source_ids": ["u-1"], "reviewed_source_ids": ["u-1"],
                               "answered_question_ids": ["q1"]}
    assert run["controls"] == {"model": "host-model-x", "tools": ["direct", "exa", "jina"],
                               "budget": {"max_search_calls": 16, "max_fetch_calls": 12, "max_rounds": 8},
                               "input_version": "in-v1", "time_window": None,
                               "harness_version": run["controls"]["harness_version"]}
    assert run["controls"]["harness_version"].startswith("bookmark-research ")
    assert run["measurements"] == {"cost_usd": None, "latency_seconds": 210.0, "basis": "observed",
                                   "usage": {"search_calls": 2, "fetch_calls": 3, "rounds": 2}}
    assert out["task"] == {"task_id": "r-00000000000000aa", "prompt": "What do the saved mill pages say?",
                           "gold_answers": None, "scope_source_ids": ["u-1", "u-2", "u-3", "u-4", "u-5"],
                           "question_ids": ["q1", "q2"]}
    assert any("1 retracted claim" in n for n in out["notes"]) and any("1 further quote" in n for n in out["notes"])


def test_converted_run_evaluates_against_its_task() -> None:
    out = run_from_state(session_state(), "# Report\n", **LABELS, task_id="mill", run_id="mill-1")
    suite, _, _ = example()
    task = dict(out["task"], gold_answers=[{"id": "g-wheel", "text": "A water wheel drives the mill."},
                                          {"id": "g-owner", "text": "The parish owns it."}])
    suite["tasks"], suite["kind"] = [task], "annotated_benchmark"
    judgments = [{"run_id": "mill-1", "rubric_id": "harrow-rubric", "rubric_version": "1",
                  "evaluator": {"kind": "human", "name": "reader", "version": "1"},
                  "answer_matches": [{"answer_id": "q1", "gold_id": "g-wheel"}],
                  "citation_labels": [{"citation_id": "c1.1", "label": "supported"},
                                      {"citation_id": "c3.1", "label": "uncertain"},
                                      {"citation_id": "c3.2", "label": "supported"}]}]
    result = evaluate(suite, [out["run"]], judgments)
    m = result["runs"][0]["metrics"]
    # 1 of 2 gold answers found with no wrong answer: P 1, R 0.5, F1 2/3. 2 of 3 citations supported.
    assert (m["answer_precision"], m["answer_recall"]) == (1.0, 0.5) and m["answer_f1"] == pytest.approx(2 / 3)
    assert m["semantic_citation_accuracy"] == pytest.approx(2 / 3) and m["semantic_claim_support"] == 1.0
    # Coverage over the 5 frozen inventory ids: accounted 5/5, text 1/5, reviewed 1/5; questions 1/2.
    assert (m["accounted_coverage"], m["text_coverage"], m["reviewed_coverage"], m["questions_coverage"]) == \
        (1.0, 0.2, 0.2, 0.5)
    assert m["latency_seconds"] == 210.0 and m["cost_usd"] is None
    assert result["kind"] == "annotated_run_evaluation"


def test_status_mapping_and_unfinished_sessions() -> None:
    state = session_state()
    state["status"] = "cancelled"
    out = run_from_state(state, "", **LABELS)
    assert out["run"]["status"] == "incomplete" and any("cancelled" in n for n in out["notes"])
    state["status"] = "active"
    with pytest.raises(InvalidInputError, match=r"status is 'active'; only a finished session"):
        run_from_state(state, "", **LABELS)
    state = session_state()
    state["finished_at"] = None
    assert run_from_state(state, "", **LABELS)["run"]["measurements"]["latency_seconds"] is None


def test_convert_session_reads_through_the_research_api(monkeypatch: pytest.MonkeyPatch, core) -> None:
    state = session_state()
    calls: list[str] = []

    def read_state(app: Any, research_id: str) -> dict[str, Any]:
        calls.append(research_id)
        return copy.deepcopy(state)

    fake = types.SimpleNamespace(read_state=read_state, report_text=lambda app, rid: "# Mill report\n")
    monkeypatch.setattr(from_session, "_research_api", lambda: fake)
    out = core("evaluation_run_from_session", research_id="r-00000000000000aa", **LABELS, repeat=3)
    assert calls == ["r-00000000000000aa"]
    assert out["run"]["report"] == "# Mill report\n" and out["run"]["repeat"] == 3
    with pytest.raises(InvalidInputError, match=r"evaluation_run_from_session: repeat: "):
        core("evaluation_run_from_session", research_id="r-00000000000000aa", **LABELS, repeat=0)


def test_save_run_adds_and_replaces(tmp_path: Path) -> None:
    run = run_from_state(session_state(), "", **LABELS)["run"]
    path = tmp_path / "runs.json"
    assert save_run(str(path), run) == {"output_file": str(path), "replaced": False, "run_count": 1}
    other = dict(run, run_id="second")
    assert save_run(str(path), other)["run_count"] == 2
    changed = dict(run, repeat=2)
    assert save_run(str(path), changed) == {"output_file": str(path), "replaced": True, "run_count": 2}
    saved = json.loads(path.read_text("utf-8"))
    assert [r["run_id"] for r in saved] == ["r-00000000000000aa", "second"] and saved[0]["repeat"] == 2

    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"runs": [other]}), "utf-8")
    save_run(str(wrapped), run)
    assert [r["run_id"] for r in json.loads(wrapped.read_text("utf-8"))["runs"]] == ["second", "r-00000000000000aa"]

    bad = tmp_path / "bad.json"
    bad.write_text('{"suite": 1}', "utf-8")
    with pytest.raises(InvalidInputError, match=r"bad\.json: must be a JSON list of runs"):
        save_run(str(bad), run)
    assert bad.read_text("utf-8") == '{"suite": 1}'


def test_report_from_the_finish_artifact_stays_inside_the_session(monkeypatch: pytest.MonkeyPatch, core,
                                                                   tmp_path: Path) -> None:
    session = tmp_path / "r-00000000000000aa"
    session.mkdir()
    (session / "report.md").write_text("# Saved report\n", "utf-8")
    (tmp_path / "secret.md").write_text("outside", "utf-8")
    (session / "link.md").symlink_to(tmp_path / "secret.md")
    state = session_state()
    fake = types.SimpleNamespace(read_state=lambda app, rid: copy.deepcopy(state),
                                 session_directory=lambda app, rid: session)
    monkeypatch.setattr(from_session, "_research_api", lambda: fake)
    reports = {}
    for name in ("report.md", "../secret.md", "link.md", "missing.md"):
        state["artifacts"] = {"report": name}
        reports[name] = core("evaluation_run_from_session", research_id="r-00000000000000aa", **LABELS)["run"]["report"]
    assert reports == {"report.md": "# Saved report\n", "../secret.md": "", "link.md": "", "missing.md": ""}
