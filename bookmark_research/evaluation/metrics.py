"""Per-run metrics: answer precision/recall/F1, citation and claim support, report quality, coverage.

Every label-dependent metric is ``None`` (JSON ``null``) unless its labels are complete: an answer
without a match annotation, a citation without a label or a rubric dimension without a score makes
the metric unknown, never 0. Structural metrics (citation presence, coverage) need no labels.
"""

from __future__ import annotations

import math
from typing import Any

from bookmark_research.evaluation.inputs import Judgment, Run, Suite, Task

#: Every per-run metric, in report order.
METRICS: tuple[str, ...] = (
    "answer_precision", "answer_recall", "answer_f1",
    "semantic_citation_accuracy", "semantic_claim_support", "citation_presence",
    "report_quality_normalized", "cost_usd", "latency_seconds",
    "accounted_coverage", "text_coverage", "reviewed_coverage", "questions_coverage",
)

#: Metrics that need labels or gold answers (a null one is reported under ``not_scored``).
LABELLED_METRICS: tuple[str, ...] = (
    "answer_f1", "semantic_citation_accuracy", "semantic_claim_support", "report_quality_normalized",
)

MISSING_IDS_SHOWN = 100


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def answer_block(task: Task, run: Run, judgment: Judgment | None) -> tuple[dict[str, Any], dict[str, float | None]]:
    """The ``answers`` block and the answer metrics of one run."""
    gold = task.gold_answers
    matches = {m.answer_id: m.gold_id for m in judgment.answer_matches} if judgment else {}
    predicted = [a.answer_id for a in run.answers]
    annotated = [matches[a] for a in predicted if a in matches]
    matched = [g for g in annotated if g is not None]
    true_positives = len(set(matched))
    false_positives = len(annotated) - len(matched)
    if gold is None:
        status = "missing_gold"
    elif len(annotated) < len(predicted):
        status = "missing_annotations"
    else:
        status = "scored"
    block: dict[str, Any] = {
        "status": status, "gold_count": None if gold is None else len(gold), "prediction_count": len(predicted),
        "annotated_count": len(annotated), "true_positives": None, "false_positives": None, "false_negatives": None,
        "duplicate_gold_matches": len(matched) - true_positives,
    }
    metrics: dict[str, float | None] = {"answer_precision": None, "answer_recall": None, "answer_f1": None}
    if status == "scored":
        assert gold is not None
        block.update(true_positives=true_positives, false_positives=false_positives,
                     false_negatives=len(gold) - true_positives)
        if true_positives + false_positives:
            precision = true_positives / (true_positives + false_positives)
        else:
            precision = 1.0 if not gold else 0.0
        recall = true_positives / len(gold) if gold else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        metrics.update(answer_precision=precision, answer_recall=recall, answer_f1=f1)
    return block, metrics


def citation_block(run: Run, judgment: Judgment | None) -> tuple[dict[str, Any], dict[str, float | None]]:
    """The ``citations`` block, semantic accuracy, claim support and (structural) citation presence."""
    labels = {c.citation_id: c.label for c in judgment.citation_labels} if judgment else {}
    total = len(run.citations)
    judged = sum(1 for c in run.citations if c.citation_id in labels)
    counts = {kind: sum(1 for c in run.citations if labels.get(c.citation_id) == kind)
              for kind in ("supported", "unsupported", "uncertain")}
    complete = judged == total
    block = {"total": total, "judged": judged, "judgment_coverage": _ratio(judged, total), **counts,
             "accuracy_over_judged": _ratio(counts["supported"], judged),
             "semantic_accuracy_requires_all_labels": True}
    claims = [c.claim_id for c in run.claims]
    cited = {c.claim_id for c in run.citations}
    supported = {c.claim_id for c in run.citations if labels.get(c.citation_id) == "supported"}
    metrics = {
        "semantic_citation_accuracy": _ratio(counts["supported"], total) if complete else None,
        "semantic_claim_support": _ratio(sum(1 for c in claims if c in supported), len(claims)) if complete else None,
        "citation_presence": _ratio(sum(1 for c in claims if c in cited), len(claims)),
    }
    return block, metrics


def report_block(suite: Suite, judgment: Judgment | None) -> tuple[dict[str, Any], dict[str, float | None]]:
    """The ``report_quality`` block and the normalised rubric score (mean of score/4 over every dimension)."""
    dimensions = list(suite.rubric.report_quality)
    scores = {s.dimension: s.score for s in judgment.report_scores} if judgment else {}
    complete = all(d in scores for d in dimensions)
    block = {"scored_dimensions": len(scores), "required_dimensions": len(dimensions), "complete": complete}
    value = math.fsum(scores[d] / 4 for d in dimensions) / len(dimensions) if complete else None
    return block, {"report_quality_normalized": value}


def _coverage_entry(reported: list[str], expected: list[str]) -> dict[str, Any]:
    missing = sorted(set(expected) - set(reported))
    return {"count": len(reported), "rate": _ratio(len(reported), len(expected)),
            "missing_ids": missing[:MISSING_IDS_SHOWN], "missing_count": len(missing)}


def coverage_block(task: Task, run: Run) -> tuple[dict[str, Any], dict[str, float | None]]:
    """Reported ids over the task's scope and questions (rates null when the task has none)."""
    cov = run.coverage
    block = {
        "original_source_count": len(task.scope_source_ids), "original_question_count": len(task.question_ids),
        "accounted": _coverage_entry(cov.accounted_source_ids, task.scope_source_ids),
        "text": _coverage_entry(cov.text_source_ids, task.scope_source_ids),
        "reviewed": _coverage_entry(cov.reviewed_source_ids, task.scope_source_ids),
        "questions": _coverage_entry(cov.answered_question_ids, task.question_ids),
    }
    metrics = {"accounted_coverage": block["accounted"]["rate"], "text_coverage": block["text"]["rate"],
               "reviewed_coverage": block["reviewed"]["rate"], "questions_coverage": block["questions"]["rate"]}
    return block, metrics


def run_metrics(suite: Suite, task: Task, run: Run, judgment: Judgment | None) -> dict[str, Any]:
    """The computed blocks of one run row: answers, citations, report_quality, coverage, metrics."""
    answers, m_answers = answer_block(task, run, judgment)
    citations, m_citations = citation_block(run, judgment)
    report, m_report = report_block(suite, judgment)
    coverage, m_coverage = coverage_block(task, run)
    measured = {"cost_usd": run.measurements.cost_usd, "latency_seconds": run.measurements.latency_seconds}
    combined = {**m_answers, **m_citations, **m_report, **measured, **m_coverage}
    return {"answers": answers, "citations": citations, "report_quality": report, "coverage": coverage,
            "metrics": {name: combined[name] for name in METRICS}}


def not_scored_reasons(row: dict[str, Any], judged: bool) -> list[str]:
    """Why a run's label-dependent metrics (or coverage rates) are null, in plain words."""
    reasons: list[str] = []
    if row["status"] != "completed":
        state = "failed" if row["status"] == "failed" else "is incomplete"
        reasons.append(f"the run {state}; its metrics describe only what it produced")
    if not judged:
        reasons.append("no judgment was supplied for this run")
    answers, citations, report = row["answers"], row["citations"], row["report_quality"]
    if answers["status"] == "missing_gold":
        reasons.append("the task has no gold answers, so answer precision, recall and F1 are null")
    elif answers["status"] == "missing_annotations":
        missing = answers["prediction_count"] - answers["annotated_count"]
        reasons.append(f"answers without a match annotation: {missing} of {answers['prediction_count']}, "
                       "so answer precision, recall and F1 are null")
    if citations["total"] == 0:
        reasons.append("the run has no citations, so semantic citation accuracy is null")
    elif citations["judged"] < citations["total"]:
        reasons.append(f"citations without a label: {citations['total'] - citations['judged']} of "
                       f"{citations['total']}, so semantic citation accuracy and claim support are null")
    if row["metrics"]["semantic_claim_support"] is None and citations["judged"] == citations["total"]:
        reasons.append("the run has no claims, so claim support and citation presence are null")
    if not report["complete"]:
        missing = report["required_dimensions"] - report["scored_dimensions"]
        reasons.append(f"report dimensions without a score: {missing} of {report['required_dimensions']}, "
                       "so report quality is null")
    coverage = row["coverage"]
    if coverage["original_source_count"] == 0:
        reasons.append("the task has no scope_source_ids, so source coverage rates are null")
    if coverage["original_question_count"] == 0:
        reasons.append("the task has no question_ids, so question coverage is null")
    return reasons
