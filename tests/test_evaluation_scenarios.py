"""The reference's evaluation scenarios, on variations of the shipped example."""

from __future__ import annotations

import copy

import pytest

from bookmark_research.evaluation.evaluate import evaluate
from bookmark_research.evaluation.groups import describe
from tests.evaluation_data import example, judgment, row, run, stratum


def test_without_judgments_label_metrics_are_null_and_structure_remains() -> None:
    suite, runs, _ = example()
    out = evaluate(suite, runs)
    for r in out["runs"]:
        if r["run_id"] != "quick-lookup-2":  # the failed run has no answers: F1 0 needs no label
            assert r["metrics"]["answer_f1"] is None
        assert r["metrics"]["semantic_citation_accuracy"] is None
        assert r["metrics"]["report_quality_normalized"] is None
        assert r["citations"]["judged"] == 0
        assert r["evaluator"] is None and r["judgment_sha256"] is None
        assert r["metrics"]["text_coverage"] is not None
    first = row(out, "notes-agent-1")
    assert first["metrics"]["citation_presence"] == 1.0
    assert first["answers"]["status"] == "missing_annotations"
    assert first["answers"]["true_positives"] is None  # counts are null unless scored
    assert out["groups"][0]["comparability"]["controlled"] is True  # no evaluator anywhere: no difference
    assert "no judgment was supplied for this run" in out["not_scored"][0]["reasons"]
    assert out["judgment_count"] == 0


def test_partial_labels_leave_three_metrics_null() -> None:
    suite, runs, judgments = example()
    j = judgment(judgments, "notes-agent-2")
    j["answer_matches"] = j["answer_matches"][:2]
    j["citation_labels"] = j["citation_labels"][:2]
    j["report_scores"] = j["report_scores"][:1]
    r = row(evaluate(suite, runs, judgments), "notes-agent-2")
    assert r["metrics"]["answer_f1"] is None and r["answers"]["status"] == "missing_annotations"
    assert r["metrics"]["semantic_citation_accuracy"] is None
    assert r["metrics"]["report_quality_normalized"] is None
    assert r["citations"]["accuracy_over_judged"] == 1.0
    assert r["citations"]["judgment_coverage"] == pytest.approx(2 / 3)


def test_uncertain_labels_stay_in_the_denominator() -> None:
    suite, runs, judgments = example()
    j = judgment(judgments, "notes-agent-2")
    j["citation_labels"][2]["label"] = "uncertain"
    r = row(evaluate(suite, runs, judgments), "notes-agent-2")
    assert r["citations"]["uncertain"] == 1
    assert r["metrics"]["semantic_citation_accuracy"] == pytest.approx(2 / 3)
    assert r["metrics"]["semantic_claim_support"] == pytest.approx(2 / 3)  # d3's only citation is uncertain


def test_missing_gold_and_unknown_cost() -> None:
    suite, runs, judgments = example()
    suite["tasks"][0]["gold_answers"] = None
    for j in judgments:
        j["answer_matches"] = [dict(m, gold_id=None) for m in j["answer_matches"]]
    for r in runs:
        r["measurements"]["cost_usd"] = None
    run(runs, "notes-agent-1")["measurements"]["latency_seconds"] = None
    out = evaluate(suite, runs, judgments)
    for r in out["runs"]:
        assert r["answers"]["status"] == "missing_gold" and r["answers"]["gold_count"] is None
        assert r["metrics"]["answer_f1"] is None
    s = stratum(out, "notes-agent")
    assert s["metrics"]["cost_usd"]["n"] == 0 and s["metrics"]["cost_usd"]["mean"] is None
    assert s["metrics"]["latency_seconds"]["n"] == 1 and s["metrics"]["latency_seconds"]["sample_variance"] is None
    assert "the task has no gold answers" in out["not_scored"][0]["reasons"][0]


def test_single_run_has_no_variance() -> None:
    suite, runs, judgments = example()
    out = evaluate(suite, [run(runs, "notes-agent-1")], [judgment(judgments, "notes-agent-1")])
    f1 = stratum(out, "notes-agent")["metrics"]["answer_f1"]
    assert (f1["n"], f1["sample_variance"], f1["sample_stddev"]) == (1, None, None)
    assert f1["mean"] == f1["min"] == f1["max"] == pytest.approx(2 / 3)
    assert describe([]) == {"n": 0, "mean": None, "sample_variance": None, "sample_stddev": None,
                            "min": None, "max": None}


def test_changed_controls_split_strata_and_reversed_tools_do_not() -> None:
    suite, runs, judgments = example()
    changed = run(runs, "notes-agent-2")["controls"]
    changed["model"] = "example-model-2"
    changed["time_window"] = "2026-02"
    changed["budget"]["max_fetch_calls"] = 12
    out = evaluate(suite, runs, judgments)
    comp = out["groups"][0]["comparability"]
    assert comp["controlled"] is False
    assert comp["differences"] == ["model", "budget", "time_window"]
    notes = [s for s in out["groups"][0]["strata"] if s["system_id"] == "notes-agent"]
    assert [s["run_ids"] for s in notes] in (
        [["notes-agent-1"], ["notes-agent-2"]], [["notes-agent-2"], ["notes-agent-1"]])
    assert all(s["metrics"]["answer_f1"]["n"] == 1 for s in notes)
    assert notes[0]["condition_id"] != notes[1]["condition_id"]

    suite, runs, judgments = example()
    run(runs, "notes-agent-2")["controls"]["tools"].reverse()
    out = evaluate(suite, runs, judgments)
    assert out["groups"][0]["comparability"]["controlled"] is True
    assert stratum(out, "notes-agent")["run_count"] == 2


def test_evaluator_and_basis_and_unrecorded_budget_are_differences() -> None:
    suite, runs, judgments = example()
    judgment(judgments, "notes-agent-2")["evaluator"]["name"] = "second-annotator"
    run(runs, "quick-lookup-1")["measurements"]["basis"] = "reported"
    run(runs, "quick-lookup-2")["controls"]["budget"]["max_rounds"] = None
    comp = evaluate(suite, runs, judgments)["groups"][0]["comparability"]
    assert comp["differences"] == ["budget", "evaluator", "measurement_basis", "budget_not_fully_recorded"]
    suite, runs, judgments = example()
    for r in runs:
        r["controls"]["budget"] = {}
    assert evaluate(suite, runs, judgments)["groups"][0]["comparability"]["differences"] == \
        ["budget_not_fully_recorded"]


def test_same_repeat_under_other_conditions_is_allowed() -> None:
    suite, runs, judgments = example()
    run(runs, "notes-agent-2")["repeat"] = 1
    run(runs, "notes-agent-2")["controls"]["harness_version"] = "example-harness-2"
    out = evaluate(suite, runs, judgments)
    assert [len(s["run_ids"]) for s in out["groups"][0]["strata"] if s["system_id"] == "notes-agent"] == [1, 1]


def test_duplicate_gold_matches_count_once() -> None:
    suite, runs, judgments = example()
    r = run(runs, "notes-agent-2")
    r["answers"].append({"answer_id": "b4", "text": "Water power drives it."})
    judgment(judgments, "notes-agent-2")["answer_matches"].append({"answer_id": "b4", "gold_id": "g-mill"})
    a = row(evaluate(suite, runs, judgments), "notes-agent-2")
    assert (a["answers"]["true_positives"], a["answers"]["duplicate_gold_matches"]) == (3, 1)
    assert a["metrics"]["answer_precision"] == 1.0


def test_empty_gold_empty_scope_and_no_questions() -> None:
    suite, runs, judgments = example()
    task = suite["tasks"][0]
    task["gold_answers"], task["scope_source_ids"], task["question_ids"] = [], [], []
    for r in runs:
        r["answers"] = []
        r["coverage"] = {k: [] for k in r["coverage"]}
    for j in judgments:
        j["answer_matches"] = []
    out = evaluate(suite, runs, judgments)
    m = row(out, "notes-agent-1")["metrics"]
    # Empty gold and no predictions: precision and recall 1, F1 1. Empty scope: coverage rates null.
    assert (m["answer_precision"], m["answer_recall"], m["answer_f1"]) == (1.0, 1.0, 1.0)
    assert m["accounted_coverage"] is None and m["questions_coverage"] is None
    assert any("no scope_source_ids" in reason for reason in out["not_scored"][0]["reasons"])


def test_missing_ids_are_capped_at_100_with_the_full_count() -> None:
    suite, runs, judgments = example()
    suite["tasks"][0]["scope_source_ids"] += [f"u-extra-{i:03d}" for i in range(150)]
    text = row(evaluate(suite, runs, judgments), "notes-agent-1")["coverage"]["text"]
    assert text["missing_count"] == 151 and len(text["missing_ids"]) == 100
    assert text["missing_ids"] == sorted(text["missing_ids"])


def test_annotated_kind_without_synthetic_parts() -> None:
    suite, runs, judgments = example()
    suite["kind"] = "annotated_benchmark"
    for r in runs:
        r["measurements"]["basis"] = "observed"
    for j in judgments:
        j["evaluator"]["kind"] = "human"
    out = evaluate(suite, runs, judgments)
    assert out["kind"] == "annotated_run_evaluation"
    assert "do not measure any host" not in out["limitations"][0] and len(out["limitations"]) == 6
    judgments[0]["evaluator"]["kind"] = "synthetic"
    judgments[1]["evaluator"]["kind"] = "synthetic"
    judgments[2]["evaluator"]["kind"] = "synthetic"
    judgments[3]["evaluator"]["kind"] = "synthetic"
    assert evaluate(suite, runs, judgments)["kind"] == "synthetic_demonstration"


def test_hashes_change_only_where_they_should() -> None:
    suite, runs, judgments = example()
    base = evaluate(suite, runs, judgments)
    edited = copy.deepcopy(judgments)
    judgment(edited, "notes-agent-1")["citation_labels"][0]["reason"] = "Reworded reason."
    after = evaluate(suite, runs, edited)
    assert after["runs_sha256"] == base["runs_sha256"] and after["suite_sha256"] == base["suite_sha256"]
    assert after["judgments_sha256"] != base["judgments_sha256"]
    assert row(after, "notes-agent-1")["judgment_sha256"] != row(base, "notes-agent-1")["judgment_sha256"]
    assert row(after, "notes-agent-2")["judgment_sha256"] == row(base, "notes-agent-2")["judgment_sha256"]
    assert [r["metrics"] for r in after["runs"]] == [r["metrics"] for r in base["runs"]]
    assert after["groups"] == base["groups"]

    # Key order does not change a canonical hash; a changed report text changes that run's hash only.
    reordered = [dict(reversed(list(r.items()))) for r in runs]
    assert evaluate(suite, reordered, judgments)["runs_sha256"] == base["runs_sha256"]
    changed = copy.deepcopy(runs)
    run(changed, "quick-lookup-1")["report"] += " More."
    out = evaluate(suite, changed, judgments)
    assert out["runs_sha256"] != base["runs_sha256"]
    assert row(out, "quick-lookup-1")["run_sha256"] != row(base, "quick-lookup-1")["run_sha256"]
    assert row(out, "notes-agent-1")["run_sha256"] == row(base, "notes-agent-1")["run_sha256"]
    assert out["judgments_sha256"] == base["judgments_sha256"]


def test_several_tasks_and_groups_are_sorted() -> None:
    suite, runs, judgments = example()
    second = copy.deepcopy(suite["tasks"][0])
    second["task_id"] = "a-first-task"
    suite["tasks"].append(second)
    moved = run(runs, "quick-lookup-1")
    moved["task_id"] = "a-first-task"
    run(runs, "notes-agent-2")["comparison_group"] = "harrow-v0"
    out = evaluate(suite, runs, judgments)
    keys = [(g["task_id"], g["comparison_group"]) for g in out["groups"]]
    assert keys == [("a-first-task", "harrow-v1"), ("harrow-notes", "harrow-v0"), ("harrow-notes", "harrow-v1")]
    assert (out["task_count"], out["evaluated_task_count"]) == (2, 2)
    suite["tasks"].append(dict(second, task_id="z-unused"))
    assert evaluate(suite, runs, judgments)["evaluated_task_count"] == 2
