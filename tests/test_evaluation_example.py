"""The shipped example (fixtures/evaluation/) evaluates to figures worked out by hand.

The suite has one task, ``harrow-notes``, with three gold answers (g-mill, g-bridge, g-archive),
four scope sources (u-mill, u-bridge, u-archive, u-offline — the last one never yields text),
three questions and a rubric of two report dimensions. Four synthetic runs, all under the same
declared conditions (quick-lookup lists its tools in the other order, which does not matter):

    notes-agent  / workflow : notes-agent-1 (repeat 1), notes-agent-2 (repeat 2)
    quick-lookup / direct   : quick-lookup-1 (repeat 1), quick-lookup-2 (repeat 2, failed, no output)
"""

from __future__ import annotations

import copy
import math

import pytest

from bookmark_research.evaluation.evaluate import evaluate
from tests.evaluation_data import example, row, stratum


@pytest.fixture(scope="module")
def result() -> dict:
    return evaluate(*example())


def test_notes_agent_1_by_hand(result: dict) -> None:
    r = row(result, "notes-agent-1")
    # Answers a1 -> g-mill, a2 -> g-bridge, a3 -> null (wrong): TP = 2 distinct gold ids, FP = 1, FN = 3 - 2 = 1.
    assert r["answers"] == {"status": "scored", "gold_count": 3, "prediction_count": 3, "annotated_count": 3,
                            "true_positives": 2, "false_positives": 1, "false_negatives": 1,
                            "duplicate_gold_matches": 0}
    m = r["metrics"]
    # precision = 2 / (2 + 1) = 2/3; recall = 2 / 3; F1 = 2 * (2/3)(2/3) / (4/3) = 2/3.
    assert m["answer_precision"] == pytest.approx(2 / 3)
    assert m["answer_recall"] == pytest.approx(2 / 3)
    assert m["answer_f1"] == pytest.approx(2 / 3)
    # Citations k1 supported, k2 supported, k3 unsupported, k4 uncertain: accuracy = 2 / 4 = 0.5
    # (uncertain stays in the denominator).
    assert m["semantic_citation_accuracy"] == 0.5
    assert r["citations"] == {"total": 4, "judged": 4, "judgment_coverage": 1.0, "supported": 2, "unsupported": 1,
                              "uncertain": 1, "accuracy_over_judged": 0.5,
                              "semantic_accuracy_requires_all_labels": True}
    # Claims c1 (k1 supported), c2 (k2 supported), c3 (k3 unsupported only): support = 2 / 3.
    assert m["semantic_claim_support"] == pytest.approx(2 / 3)
    assert m["citation_presence"] == 1.0  # every claim has a citation
    # Report: organisation 3/4 = 0.75, faithfulness 2/4 = 0.5; mean = 0.625.
    assert m["report_quality_normalized"] == 0.625
    # Coverage: 3 of 4 scope sources accounted and with text (u-offline missing); 2 of 4 reviewed; 3 of 3 questions.
    assert (m["accounted_coverage"], m["text_coverage"], m["reviewed_coverage"], m["questions_coverage"]) == \
        (0.75, 0.75, 0.5, 1.0)
    cov = r["coverage"]
    assert cov["text"] == {"count": 3, "rate": 0.75, "missing_ids": ["u-offline"], "missing_count": 1}
    assert cov["reviewed"]["missing_ids"] == ["u-archive", "u-offline"]
    assert (m["cost_usd"], m["latency_seconds"]) == (0.12, 40)


def test_notes_agent_2_by_hand(result: dict) -> None:
    m = row(result, "notes-agent-2")["metrics"]
    # Three answers, each a different gold id: P = R = F1 = 3/3 = 1.
    assert (m["answer_precision"], m["answer_recall"], m["answer_f1"]) == (1.0, 1.0, 1.0)
    assert (m["semantic_citation_accuracy"], m["semantic_claim_support"]) == (1.0, 1.0)  # 3 of 3 supported
    assert m["report_quality_normalized"] == 1.0  # (4/4 + 4/4) / 2
    # u-offline was accounted for (a failed fetch) but gave no text: accounted 4/4 = 1, text 3/4 = 0.75.
    assert (m["accounted_coverage"], m["text_coverage"], m["reviewed_coverage"]) == (1.0, 0.75, 0.75)
    assert row(result, "notes-agent-2")["coverage"]["text"]["missing_ids"] == ["u-offline"]


def test_quick_lookup_1_duplicate_match_and_partial_labels(result: dict) -> None:
    r = row(result, "quick-lookup-1")
    # e1 -> g-mill and e2 -> g-mill: one distinct gold id, so TP = 1 and the second match is a duplicate
    # (neither TP nor FP). P = 1 / (1 + 0) = 1; R = 1 / 3; F1 = 2 * 1 * (1/3) / (4/3) = 0.5.
    assert (r["answers"]["true_positives"], r["answers"]["false_positives"],
            r["answers"]["duplicate_gold_matches"]) == (1, 0, 1)
    assert r["metrics"]["answer_recall"] == pytest.approx(1 / 3)
    assert r["metrics"]["answer_f1"] == pytest.approx(0.5)
    # n1 labelled supported, n2 unlabelled: accuracy and claim support are unknown, not 0.
    assert r["metrics"]["semantic_citation_accuracy"] is None
    assert r["metrics"]["semantic_claim_support"] is None
    assert (r["citations"]["judgment_coverage"], r["citations"]["accuracy_over_judged"]) == (0.5, 1.0)
    # Only 1 of 2 report dimensions scored: null. Cost not measured: null.
    assert r["metrics"]["report_quality_normalized"] is None
    assert r["report_quality"] == {"scored_dimensions": 1, "required_dimensions": 2, "complete": False}
    assert r["metrics"]["cost_usd"] is None
    # Coverage: accounted 2/4, text 1/4, reviewed 0/4 (0, not null: the scope is not empty), questions 1/3.
    assert r["metrics"]["text_coverage"] == 0.25 and r["metrics"]["reviewed_coverage"] == 0.0
    assert r["metrics"]["questions_coverage"] == pytest.approx(1 / 3)


def test_failed_run_scores_zero_f1_not_null(result: dict) -> None:
    r = row(result, "quick-lookup-2")
    # No answers against three gold answers: TP + FP = 0 with non-empty gold gives P = 0, R = 0 / 3 = 0, F1 = 0.
    assert (r["metrics"]["answer_precision"], r["metrics"]["answer_recall"], r["metrics"]["answer_f1"]) == (0.0, 0.0, 0.0)
    # No citations (0/0) and no claims: null. Both report dimensions scored 0: report quality 0.
    assert r["metrics"]["semantic_citation_accuracy"] is None
    assert r["metrics"]["citation_presence"] is None
    assert r["metrics"]["report_quality_normalized"] == 0.0


def test_repeat_variance_by_hand(result: dict) -> None:
    s = stratum(result, "notes-agent")
    assert s["run_ids"] == ["notes-agent-1", "notes-agent-2"] and s["run_count"] == 2
    f1 = s["metrics"]["answer_f1"]
    # F1 values 2/3 and 1: mean 5/6; sample variance = ((2/3 - 5/6)^2 + (1 - 5/6)^2) / (2 - 1)
    # = (1/36 + 1/36) / 1 = 1/18 ≈ 0.0556; sd = sqrt(1/18) ≈ 0.2357.
    assert f1["n"] == 2
    assert f1["mean"] == pytest.approx(5 / 6)
    assert f1["sample_variance"] == pytest.approx(1 / 18)
    assert f1["sample_stddev"] == pytest.approx(math.sqrt(1 / 18))
    assert (f1["min"], f1["max"]) == (pytest.approx(2 / 3), 1.0)
    # Citation accuracy 0.5 and 1: mean 0.75, variance (0.0625 + 0.0625) / 1 = 0.125.
    acc = s["metrics"]["semantic_citation_accuracy"]
    assert (acc["mean"], acc["sample_variance"]) == (0.75, pytest.approx(0.125))
    # Latency 40 and 50 s: mean 45, variance (25 + 25) / 1 = 50.
    lat = s["metrics"]["latency_seconds"]
    assert (lat["mean"], lat["sample_variance"]) == (45.0, pytest.approx(50.0))


def test_quick_lookup_stratum_drops_nulls(result: dict) -> None:
    s = stratum(result, "quick-lookup")
    assert (s["run_count"], s["failed_runs"], s["incomplete_runs"]) == (2, 1, 0)
    # F1 0.5 and 0 (the failed run counts): mean 0.25, variance (0.0625 + 0.0625) / 1 = 0.125.
    assert s["metrics"]["answer_f1"]["mean"] == 0.25
    assert s["metrics"]["answer_f1"]["sample_variance"] == pytest.approx(0.125)
    # Cost unknown in both runs: n = 0 and every statistic null (never averaged as 0).
    assert s["metrics"]["cost_usd"] == {"n": 0, "mean": None, "sample_variance": None, "sample_stddev": None,
                                        "min": None, "max": None}
    # Report quality known for one run only (0.0): n = 1, no variance.
    rq = s["metrics"]["report_quality_normalized"]
    assert (rq["n"], rq["mean"], rq["sample_variance"], rq["sample_stddev"]) == (1, 0.0, None, None)


def test_summary_fields(result: dict) -> None:
    assert (result["run_count"], result["task_count"], result["evaluated_task_count"]) == (4, 1, 1)
    assert result["kind"] == "synthetic_demonstration"
    assert result["provider_quality_claim"] is False
    assert len(result["groups"]) == 1
    group = result["groups"][0]
    # quick-lookup lists its tools as [fetch_web, search_web]: order does not matter, so still controlled.
    assert group["comparability"]["controlled"] is True and group["comparability"]["differences"] == []
    assert [s["system_id"] for s in group["strata"]] == ["notes-agent", "quick-lookup"]
    assert len(result["limitations"]) == 6 and "do not measure any host" in result["limitations"][0]
    assert [e["run_id"] for e in result["not_scored"]] == ["quick-lookup-1", "quick-lookup-2"]


def test_inputs_are_not_modified() -> None:
    suite, runs, judgments = example()
    before = copy.deepcopy((suite, runs, judgments))
    out = evaluate(suite, runs, judgments)
    out["runs"][0]["controls"]["tools"].append("changed")  # the output shares nothing with the input
    assert (suite, runs, judgments) == before
