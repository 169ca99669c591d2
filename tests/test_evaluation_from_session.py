"""A finished research session becomes an evaluation run whose coverage uses frozen inventory ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bookmark_research.errors import InvalidInputError
from bookmark_research.evaluation.evaluate import evaluate
from bookmark_research.evaluation.from_session import run_from_state, save_run
from tests.evaluation_data import example
from tests.research_support import claim, imported, record, start

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


def session_coverage() -> dict[str, Any]:
    """Coverage rows as research_coverage computes them for session_state(): u-1 reviewed with accepted
    text; u-2 a failed fetch, u-3 rejected, u-4 excluded by review, u-5 text not yet accepted (accounted only)."""
    def row(iid: str, usable: bool = False, substantive: bool = False) -> dict[str, Any]:
        return {"id": iid, "accounted_for": True, "usable_text": usable, "substantive_review": substantive}

    return {"rows": [row("u-1", True, True), row("u-2"), row("u-3"), row("u-4"), row("u-5")]}


def test_run_from_state() -> None:
    out = run_from_state(session_state(), session_coverage(), "# Report\n", **LABELS, model="host-model-x")
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
    out = run_from_state(session_state(), session_coverage(), "# Report\n", **LABELS, task_id="mill",
                         run_id="mill-1")
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
    out = run_from_state(state, session_coverage(), "", **LABELS)
    assert out["run"]["status"] == "incomplete" and any("cancelled" in n for n in out["notes"])
    state["status"] = "active"
    with pytest.raises(InvalidInputError, match=r"status is 'active'; only a finished session"):
        run_from_state(state, session_coverage(), "", **LABELS)
    state = session_state()
    state["finished_at"] = None
    assert run_from_state(state, session_coverage(), "", **LABELS)["run"]["measurements"]["latency_seconds"] is None


def test_save_run_adds_and_replaces(tmp_path: Path) -> None:
    run = run_from_state(session_state(), session_coverage(), "", **LABELS)["run"]
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


def finished_session(core: Any) -> str:
    """A real session over two URLs: one page imported, accepted, quoted and reviewed; the other never read."""
    rid = start(core, ["https://mill.example/a", "https://mill.example/b"])["research_id"]
    imported(core, rid, "read-a", "https://mill.example/a")
    record(core, rid, kind="source_review", source_id="s1", verdict="accepted", text="the vendor's own docs")
    claim(core, rid, "s1", "the service supports search and fetch", statement="It supports search and fetch.")
    rows = core("research_coverage", research_id=rid)["items"]
    first = next(r["id"] for r in rows if r["original_url"].endswith("/a"))
    record(core, rid, kind="inventory_review", inventory_id=first, disposition="reviewed", text="read in full",
           question_ids=["q1"], source_ids=["s1"], claim_ids=["c1"])
    record(core, rid, kind="answer", question_id="q1", answer="Search and fetch.", claim_ids=["c1"])
    core("research_finish", research_id=rid, summary="One of two pages read.", status="incomplete")
    return rid


def test_a_real_session_converts_with_its_own_coverage_and_evaluates(core: Any) -> None:
    rid = finished_session(core)
    out = core("evaluation_run_from_session", research_id=rid, **LABELS)
    run, task = out["run"], out["task"]
    rows = core("research_coverage", research_id=rid)["items"]
    read = [r["id"] for r in rows if r["original_url"].endswith("/a")]
    # The run's coverage is the session's own: /a accounted, read and reviewed; /b never touched.
    assert run["coverage"] == {"accounted_source_ids": read, "text_source_ids": read, "reviewed_source_ids": read,
                               "answered_question_ids": ["q1"]}
    assert sorted(task["scope_source_ids"]) == sorted(r["id"] for r in rows) and len(rows) == 2
    assert run["status"] == "incomplete" and run["answers"] == [{"answer_id": "q1", "text": "Search and fetch."}]
    assert run["citations"][0]["quote"] == "the service supports search and fetch"
    assert run["report"].startswith("# ") and "Search and fetch." in run["report"]
    result = core("evaluate_research", suite=dict(example()[0], tasks=[task]), runs=[run])
    metrics = result["runs"][0]["metrics"]
    assert (metrics["accounted_coverage"], metrics["text_coverage"], metrics["reviewed_coverage"]) == (0.5, 0.5, 0.5)
    assert metrics["answer_f1"] is None  # no gold answers: null, never 0


def test_only_a_finished_session_converts(core: Any) -> None:
    rid = start(core, ["https://mill.example/a"])["research_id"]
    with pytest.raises(InvalidInputError, match=r"status is 'active'; only a finished session"):
        core("evaluation_run_from_session", research_id=rid, **LABELS)
    with pytest.raises(InvalidInputError, match=r"evaluation_run_from_session: repeat: "):
        core("evaluation_run_from_session", research_id=rid, **LABELS, repeat=0)


def test_cli_run_from_session_writes_a_runs_file_that_evaluates(core: Any, tmp_path: Path) -> None:
    from tests.conftest import cli_json

    rid = finished_session(core)
    runs = tmp_path / "runs.json"
    saved = cli_json("evaluate", "run-from-session", rid, "--system-id", "host-agent", "--mode", "workflow",
                     "--comparison-group", "demo", "--output", str(runs), data_dir=core.data_dir)
    assert saved["run_count"] == 1 and json.loads(runs.read_text("utf-8"))[0]["run_id"] == rid
    out = cli_json("evaluate", "run-from-session", rid, "--system-id", "host-agent", "--mode", "workflow",
                   "--comparison-group", "demo", data_dir=core.data_dir)
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps(dict(example()[0], tasks=[out["task"]])), "utf-8")
    result = cli_json("evaluate", str(suite), str(runs), data_dir=core.data_dir)
    assert result["run_count"] == 1 and result["runs"][0]["metrics"]["questions_coverage"] == 1.0


def test_the_readme_suite_format_scores_a_session_run(core: Any, tmp_path: Path) -> None:
    """QA D4: the README lists a suite's required fields; its example, with the task run-from-session prints,
    scores the run from the CLI (no refusal one field at a time)."""
    import re

    from tests.conftest import cli_json

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    block = re.search(r"A suite needs every one of these fields.*?```json\n(.*?)```", readme, re.S)
    assert block is not None
    suite = json.loads(block.group(1))
    rid = finished_session(core)
    out = cli_json("evaluate", "run-from-session", rid, "--system-id", "host-agent", "--mode", "workflow",
                   "--comparison-group", "demo", "--output", str(tmp_path / "runs.json"), data_dir=core.data_dir)
    suite["tasks"] = [out["task"]]
    (tmp_path / "suite.json").write_text(json.dumps(suite), "utf-8")
    result = cli_json("evaluate", str(tmp_path / "suite.json"), str(tmp_path / "runs.json"), data_dir=core.data_dir)
    assert result["run_count"] == 1 and result["runs"][0]["metrics"]["questions_coverage"] == 1.0


def test_cost_columns_line_up_and_an_empty_runs_file_is_a_new_list(tmp_path: Path) -> None:
    """QA papercut 20."""
    from bookmark_research.evaluation.report import stat_cell

    cell = stat_cell({"n": 2, "mean": 0.11, "sample_stddev": 0.0141421356, "sample_variance": 0.0002, "min": 0.1,
                      "max": 0.12}, "cost_usd")
    assert cell == "0.1100 ± 0.0141 (n=2)"
    empty = tmp_path / "runs.json"
    empty.write_text("", "utf-8")
    run = run_from_state(session_state(), session_coverage(), "# Report\n", **LABELS)["run"]
    assert save_run(str(empty), run)["run_count"] == 1
    assert [r["run_id"] for r in json.loads(empty.read_text("utf-8"))] == [run["run_id"]]
