"""Every rejected evaluation input gives one line that starts with the field path at fault."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from bookmark_research.errors import InvalidInputError
from bookmark_research.evaluation.evaluate import evaluate
from tests.evaluation_data import example

Mutator = Callable[[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]], Any]


def _set(target: dict[str, Any], key: str, value: Any) -> None:
    target[key] = value


CASES: list[tuple[str, Mutator, str]] = [
    # suite
    ("schema 2", lambda s, r, j: _set(s, "schema_version", 2), r"suite\.schema_version: must be 1"),
    ("schema bool", lambda s, r, j: _set(s, "schema_version", True), r"suite\.schema_version: .*valid integer"),
    ("suite kind", lambda s, r, j: _set(s, "kind", "benchmark"), r"suite\.kind: Input should be"),
    ("suite_id long", lambda s, r, j: _set(s, "suite_id", "x" * 301), r"suite\.suite_id: .*at most 300"),
    ("no tasks", lambda s, r, j: _set(s, "tasks", []), r"suite\.tasks: .*at least 1"),
    ("suite extra", lambda s, r, j: _set(s, "owner", "me"), r"suite\.owner: unknown field"),
    ("task missing field", lambda s, r, j: s["tasks"][0].pop("question_ids"),
     r"suite\.tasks\[0\]\.question_ids: required field is missing"),
    ("duplicate task", lambda s, r, j: s["tasks"].append(dict(s["tasks"][0])),
     r"suite\.tasks\[1\]: duplicate task_id 'harrow-notes'"),
    ("duplicate gold", lambda s, r, j: s["tasks"][0]["gold_answers"].append({"id": "g-mill", "text": "again"}),
     r"suite\.tasks\[0\]\.gold_answers\[3\]: duplicate gold id"),
    ("duplicate scope id", lambda s, r, j: s["tasks"][0]["scope_source_ids"].append("u-mill"),
     r"suite\.tasks\[0\]\.scope_source_ids\[4\]: duplicate"),
    ("rubric extra", lambda s, r, j: _set(s["rubric"], "scale", 5), r"suite\.rubric\.scale: unknown field"),
    ("rubric empty text", lambda s, r, j: _set(s["rubric"], "answer_matching", ""),
     r"suite\.rubric\.answer_matching: "),
    ("too many dimensions", lambda s, r, j: _set(s["rubric"], "report_quality", {f"d{i}": "x" for i in range(21)}),
     r"suite\.rubric\.report_quality: .*at most 20"),
    ("no dimensions", lambda s, r, j: _set(s["rubric"], "report_quality", {}), r"suite\.rubric\.report_quality: "),
    # runs: structure
    ("run extra", lambda s, r, j: _set(r[2], "notes", "x"), r"runs\[2\]\.notes: unknown field"),
    ("run not object", lambda s, r, j: r.__setitem__(1, ["x"]), r"runs\[1\]: Input should be a valid dictionary"),
    ("repeat bool", lambda s, r, j: _set(r[0], "repeat", True), r"runs\[0\]\.repeat: .*valid integer"),
    ("repeat zero", lambda s, r, j: _set(r[0], "repeat", 0), r"runs\[0\]\.repeat: .*greater than or equal to 1"),
    ("repeat large", lambda s, r, j: _set(r[0], "repeat", 100_001), r"runs\[0\]\.repeat: .*less than or equal"),
    ("repeat float", lambda s, r, j: _set(r[0], "repeat", 1.0), r"runs\[0\]\.repeat: .*valid integer"),
    ("controls extra", lambda s, r, j: _set(r[0]["controls"], "seed", 1), r"runs\[0\]\.controls\.seed: unknown"),
    ("controls missing", lambda s, r, j: r[0]["controls"].pop("time_window"),
     r"runs\[0\]\.controls\.time_window: required field is missing"),
    ("duplicate tool", lambda s, r, j: r[0]["controls"]["tools"].append("fetch_web"),
     r"runs\[0\]\.controls\.tools\[2\]: duplicate tool"),
    ("budget negative", lambda s, r, j: _set(r[1]["controls"]["budget"], "max_rounds", -1),
     r"runs\[1\]\.controls\.budget\.max_rounds: .*greater than or equal to 0"),
    ("budget bool", lambda s, r, j: _set(r[1]["controls"]["budget"], "max_rounds", True),
     r"runs\[1\]\.controls\.budget\.max_rounds: .*valid number"),
    ("budget nan", lambda s, r, j: _set(r[1]["controls"]["budget"], "max_rounds", float("nan")),
     r"runs\[1\]\.controls\.budget\.max_rounds: .*finite number"),
    ("budget string", lambda s, r, j: _set(r[1]["controls"]["budget"], "max_rounds", "4"),
     r"runs\[1\]\.controls\.budget\.max_rounds: .*valid number"),
    ("budget too big", lambda s, r, j: _set(r[1]["controls"], "budget", {f"b{i}": 1 for i in range(31)}),
     r"runs\[1\]\.controls\.budget: .*at most 30"),
    ("cost nan", lambda s, r, j: _set(r[0]["measurements"], "cost_usd", float("nan")),
     r"runs\[0\]\.measurements\.cost_usd: .*finite number"),
    ("latency inf", lambda s, r, j: _set(r[0]["measurements"], "latency_seconds", float("inf")),
     r"runs\[0\]\.measurements\.latency_seconds: .*finite number"),
    ("cost bool", lambda s, r, j: _set(r[0]["measurements"], "cost_usd", False),
     r"runs\[0\]\.measurements\.cost_usd: .*valid number"),
    ("basis", lambda s, r, j: _set(r[0]["measurements"], "basis", "estimated"),
     r"runs\[0\]\.measurements\.basis: Input should be"),
    ("usage too big", lambda s, r, j: _set(r[0]["measurements"], "usage", {f"u{i}": 1 for i in range(51)}),
     r"runs\[0\]\.measurements\.usage: .*at most 50"),
    ("usage nan", lambda s, r, j: _set(r[0]["measurements"], "usage", {"tokens": float("-inf")}),
     r"runs\[0\]\.measurements\.usage\.tokens: .*finite"),
    ("report long", lambda s, r, j: _set(r[0], "report", "x" * 1_000_001), r"runs\[0\]\.report: .*at most 1000000"),
    ("status", lambda s, r, j: _set(r[0], "status", "done"), r"runs\[0\]\.status: Input should be"),
    ("answer id missing", lambda s, r, j: r[0]["answers"][1].pop("answer_id"),
     r"runs\[0\]\.answers\[1\]\.answer_id: required field is missing"),
    # runs: cross-references
    ("no runs", lambda s, r, j: r.clear(), r"runs: must hold 1 to 10000 runs \(got 0\)"),
    ("duplicate run", lambda s, r, j: _set(r[3], "run_id", "notes-agent-1"), r"runs\[3\]: duplicate run_id"),
    ("unknown task", lambda s, r, j: _set(r[2], "task_id", "other"), r"runs\[2\]\.task_id: unknown task 'other'"),
    ("unknown claim", lambda s, r, j: _set(r[0]["citations"][1], "claim_id", "c9"),
     r"runs\[0\]\.citations\[1\]\.claim_id: unknown claim 'c9'"),
    ("duplicate pair", lambda s, r, j: _set(r[0]["citations"][3], "source_id", "u-mill"),
     r"runs\[0\]\.citations\[3\]\.source_id: claim 'c1' already cites source 'u-mill' in citations\[0\]; "
     r"deduplicate claim/source citation pairs"),
    ("duplicate citation id", lambda s, r, j: _set(r[0]["citations"][2], "citation_id", "k1"),
     r"runs\[0\]\.citations\[2\]: duplicate citation_id"),
    ("reviewed not text", lambda s, r, j: r[2]["coverage"]["reviewed_source_ids"].append("u-bridge"),
     r"runs\[2\]\.coverage\.reviewed_source_ids\[0\]: 'u-bridge' is not in text_source_ids"),
    ("text not accounted", lambda s, r, j: r[2]["coverage"]["text_source_ids"].append("u-archive"),
     r"runs\[2\]\.coverage\.text_source_ids\[1\]: 'u-archive' is not in accounted_source_ids"),
    ("accounted not scope", lambda s, r, j: r[2]["coverage"]["accounted_source_ids"].append("u-elsewhere"),
     r"runs\[2\]\.coverage\.accounted_source_ids\[2\]: 'u-elsewhere' is not in the scope_source_ids"),
    ("answered not question", lambda s, r, j: r[2]["coverage"]["answered_question_ids"].append("q-none"),
     r"runs\[2\]\.coverage\.answered_question_ids\[1\]: 'q-none' is not in the question_ids"),
    ("duplicate coverage id", lambda s, r, j: r[2]["coverage"]["accounted_source_ids"].append("u-mill"),
     r"runs\[2\]\.coverage\.accounted_source_ids\[2\]: duplicate"),
    ("duplicate repeat", lambda s, r, j: _set(r[1], "repeat", 1),
     r"runs\[1\]\.repeat: repeat 1 is already used by runs\[0\]"),
    # judgments
    ("unknown run", lambda s, r, j: _set(j[1], "run_id", "ghost"), r"judgments\[1\]\.run_id: unknown run 'ghost'"),
    ("duplicate judgment", lambda s, r, j: _set(j[1], "run_id", "notes-agent-1"),
     r"judgments\[1\]\.run_id: duplicate judgment for run 'notes-agent-1'"),
    ("rubric id", lambda s, r, j: _set(j[0], "rubric_id", "other"), r"judgments\[0\]\.rubric_id: 'other' is not"),
    ("rubric version", lambda s, r, j: _set(j[2], "rubric_version", "2"),
     r"judgments\[2\]\.rubric_version: '2' is not the suite rubric version '1'"),
    ("evaluator kind", lambda s, r, j: _set(j[0]["evaluator"], "kind", "crowd"),
     r"judgments\[0\]\.evaluator\.kind: Input should be"),
    ("judgment extra", lambda s, r, j: _set(j[0], "notes", ""), r"judgments\[0\]\.notes: unknown field"),
    ("unknown answer", lambda s, r, j: _set(j[0]["answer_matches"][2], "answer_id", "b1"),
     r"judgments\[0\]\.answer_matches\[2\]\.answer_id: unknown answer 'b1'"),
    ("unknown gold", lambda s, r, j: _set(j[0]["answer_matches"][2], "gold_id", "g-moon"),
     r"judgments\[0\]\.answer_matches\[2\]\.gold_id: unknown gold id 'g-moon'"),
    ("duplicate match", lambda s, r, j: _set(j[0]["answer_matches"][2], "answer_id", "a1"),
     r"judgments\[0\]\.answer_matches\[2\]: duplicate answer_id 'a1'"),
    ("unknown citation", lambda s, r, j: _set(j[1]["citation_labels"][0], "citation_id", "k1"),
     r"judgments\[1\]\.citation_labels\[0\]\.citation_id: unknown citation 'k1'"),
    ("bad label", lambda s, r, j: _set(j[1]["citation_labels"][0], "label", "partly"),
     r"judgments\[1\]\.citation_labels\[0\]\.label: Input should be"),
    ("score 5", lambda s, r, j: _set(j[1]["report_scores"][0], "score", 5),
     r"judgments\[1\]\.report_scores\[0\]\.score: .*less than or equal to 4"),
    ("score negative", lambda s, r, j: _set(j[1]["report_scores"][0], "score", -1),
     r"judgments\[1\]\.report_scores\[0\]\.score: .*greater than or equal to 0"),
    ("score bool", lambda s, r, j: _set(j[1]["report_scores"][0], "score", True),
     r"judgments\[1\]\.report_scores\[0\]\.score: .*valid number"),
    ("score nan", lambda s, r, j: _set(j[1]["report_scores"][0], "score", float("nan")),
     r"judgments\[1\]\.report_scores\[0\]\.score: .*finite number"),
    ("unknown dimension", lambda s, r, j: _set(j[1]["report_scores"][0], "dimension", "style"),
     r"judgments\[1\]\.report_scores\[0\]\.dimension: 'style' is not a report_quality dimension"),
    ("duplicate dimension", lambda s, r, j: _set(j[1]["report_scores"][1], "dimension", "organisation"),
     r"judgments\[1\]\.report_scores\[1\]: duplicate dimension 'organisation'"),
]


@pytest.mark.parametrize("name,mutate,expected", CASES, ids=[c[0] for c in CASES])
def test_rejected_with_field_path(name: str, mutate: Mutator, expected: str) -> None:
    suite, runs, judgments = example()
    mutate(suite, runs, judgments)
    with pytest.raises(InvalidInputError, match=r"^" + expected) as info:
        evaluate(suite, runs, judgments)
    assert "\n" not in info.value.message


def test_top_level_shapes_are_rejected() -> None:
    suite, runs, judgments = example()
    with pytest.raises(InvalidInputError, match=r"^suite: must be a JSON object"):
        evaluate([suite], runs, judgments)
    with pytest.raises(InvalidInputError, match=r"^runs: must be a list of run objects"):
        evaluate(suite, {"runs": runs}, judgments)
    with pytest.raises(InvalidInputError, match=r"^judgments: must be a list of judgment objects"):
        evaluate(suite, runs, {"judgments": judgments})


def test_a_citation_label_for_an_unknown_citation_names_its_run() -> None:
    suite, runs, judgments = example()
    judgments[3]["citation_labels"] = [{"citation_id": "k1", "label": "supported"}]
    with pytest.raises(InvalidInputError, match=re.escape("not among the citations of run 'quick-lookup-2'")):
        evaluate(suite, runs, judgments)


def test_accepts_ints_for_numbers_and_optional_fields() -> None:
    suite, runs, judgments = example()
    runs[0]["artifacts"] = {"report": "report.md"}
    runs[0]["external_run_id"] = "er-1"
    runs[0]["citations"][0].update(url="https://example.org/mill", research_id="r-0123456789abcdef",
                                   source_sha256="0" * 64)
    suite["tasks"][0]["gold_answers"][0]["quote"] = "the undershot wheel"
    del judgments[0]["citation_labels"][0]["reason"]
    out = evaluate(suite, runs, judgments)
    assert out["runs"][0]["external_run_id"] == "er-1"
    assert out["runs"][0]["controls"]["budget"] == {"max_search_calls": 8, "max_fetch_calls": 6, "max_rounds": 4}
