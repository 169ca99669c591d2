"""The evaluation input contract: a suite, runs and judgments, validated before anything is computed.

Structure is checked by closed, strict pydantic models (unknown fields, booleans given as numbers,
NaN and Infinity are refused); the cross-references (a citation's claim, a judgment's run, the
coverage subsets, repeat numbers) are checked afterwards. Every failure is one
:class:`InvalidInputError` line that starts with the field path, e.g.
``runs[3].citations[1].claim_id: unknown claim 'c9' (not among this run's claims)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from bookmark_research.canvas.validation import field_path
from bookmark_research.errors import InvalidInputError

MAX_RUNS = 10_000  # the library's limit; the MCP tool takes 1..1000
MAX_JUDGMENTS = 10_000

Id = Annotated[str, StringConstraints(min_length=1, max_length=300, pattern=r"^[^\x00]*\S[^\x00]*$")]
Name = Annotated[str, StringConstraints(min_length=1, max_length=300, pattern=r"^[^\x00]*\S[^\x00]*$")]
Label = Annotated[str, StringConstraints(max_length=4_000)]
Text = Annotated[str, StringConstraints(max_length=200_000)]
Instruction = Annotated[str, StringConstraints(min_length=1, max_length=16_000, pattern=r"\S")]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Score = Annotated[float, Field(ge=0, le=4, allow_inf_nan=False)]
IdList = Annotated[list[Id], Field(max_length=100_000)]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# --- suite -----------------------------------------------------------------------------------------


class GoldAnswer(_Closed):
    """A correct answer of a task, with the sources that support it."""

    id: Id
    text: Text
    source_ids: Annotated[list[Id], Field(max_length=1_000)] = []
    quote: Text | None = None


class Task(_Closed):
    """A research task: the prompt, its gold answers (null: not labelled) and the sources and questions in scope."""

    task_id: Id
    prompt: Annotated[str, StringConstraints(min_length=1, max_length=200_000, pattern=r"\S")]
    gold_answers: Annotated[list[GoldAnswer], Field(max_length=1_000)] | None
    scope_source_ids: IdList
    question_ids: Annotated[list[Id], Field(max_length=10_000)]


class Rubric(_Closed):
    """How answers, citations and reports are judged; report_quality maps 1-20 dimensions to their 0-4 scale."""

    id: Instruction
    version: Instruction
    answer_matching: Instruction
    citation_support: Instruction
    report_quality: Annotated[dict[Name, Instruction], Field(min_length=1, max_length=20)]


class Suite(_Closed):
    """The tasks runs are scored against (schema_version must be 1)."""

    schema_version: int
    suite_id: Name
    kind: Literal["synthetic_fixture", "annotated_benchmark"]
    tasks: Annotated[list[Task], Field(min_length=1, max_length=1_000)]
    rubric: Rubric
    description: Any = None
    annotation: Any = None
    sources: Any = None


# --- run -------------------------------------------------------------------------------------------


class Controls(_Closed):
    """The declared conditions of a run; runs are only averaged together when these agree."""

    model: Label | None
    tools: Annotated[list[Name], Field(max_length=200)]
    budget: Annotated[dict[Name, NonNegative | None], Field(max_length=30)]
    input_version: Label | None
    time_window: Label | None
    harness_version: Label | None


class Answer(_Closed):
    answer_id: Id
    text: Text


class Claim(_Closed):
    claim_id: Id
    text: Text


class Citation(_Closed):
    """A claim's citation of one source (one per claim and source)."""

    citation_id: Id
    claim_id: Id
    source_id: Id
    quote: Text
    url: Annotated[str, StringConstraints(max_length=8_192)] | None = None
    research_id: Label | None = None
    source_sha256: Label | None = None


class Coverage(_Closed):
    """Ids the run covered: reviewed ⊆ text ⊆ accounted ⊆ the task's scope_source_ids; answered ⊆ question_ids."""

    accounted_source_ids: IdList
    text_source_ids: IdList
    reviewed_source_ids: IdList
    answered_question_ids: Annotated[list[Id], Field(max_length=10_000)]


class Measurements(_Closed):
    """Cost and latency (null: unknown) and how they were obtained."""

    cost_usd: NonNegative | None
    latency_seconds: NonNegative | None
    basis: Literal["observed", "reported", "synthetic"]
    usage: Annotated[dict[Name, NonNegative | None], Field(max_length=50)]


class Run(_Closed):
    """One research run; task_id must be the task_id of one of the suite's tasks."""

    run_id: Id
    task_id: Id
    system_id: Id
    mode: Id
    comparison_group: Id
    repeat: Annotated[int, Field(ge=1, le=100_000)]
    controls: Controls
    answers: Annotated[list[Answer], Field(max_length=1_000)]
    claims: Annotated[list[Claim], Field(max_length=50_000)]
    citations: Annotated[list[Citation], Field(max_length=200_000)]
    coverage: Coverage
    measurements: Measurements
    report: Annotated[str, StringConstraints(max_length=1_000_000)]
    artifacts: Any = None
    status: Literal["completed", "incomplete", "failed"] = "completed"
    external_run_id: Label | None = None


# --- judgment --------------------------------------------------------------------------------------


class Evaluator(_Closed):
    """Who made the judgment."""

    kind: Literal["human", "model", "synthetic"]
    name: Name
    version: Label


class AnswerMatch(_Closed):
    """The gold answer an answer matches (gold_id null: it matches none)."""

    answer_id: Id
    gold_id: Id | None


class CitationLabel(_Closed):
    """Whether a citation supports its claim."""

    citation_id: Id
    label: Literal["supported", "unsupported", "uncertain"]
    reason: Text = ""


class ReportScore(_Closed):
    """A 0-4 score of the report on one rubric report_quality dimension."""

    dimension: Name
    score: Score
    reason: Text = ""


class Judgment(_Closed):
    """The labels of one run (run_id), made under the suite's rubric id and version."""

    run_id: Id
    rubric_id: Instruction
    rubric_version: Instruction
    evaluator: Evaluator
    answer_matches: Annotated[list[AnswerMatch], Field(max_length=1_000)] = []
    citation_labels: Annotated[list[CitationLabel], Field(max_length=200_000)] = []
    report_scores: Annotated[list[ReportScore], Field(max_length=20)] = []


# --- validation ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Inputs:
    """Validated inputs; ``raw_*`` are the caller's JSON values, never modified."""

    suite: Suite
    runs: list[Run]
    judgments: dict[str, Judgment]  # by run_id
    judgment_index: dict[str, int]  # run_id -> position in raw_judgments
    raw_suite: dict[str, Any]
    raw_runs: list[dict[str, Any]]
    raw_judgments: list[dict[str, Any]]


def _fail(path: str, message: str) -> InvalidInputError:
    return InvalidInputError(f"{path}: {message}")


def _model(model: type[_Closed], data: Any, path: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        message = first["msg"]
        if first["type"] == "extra_forbidden":
            message = "unknown field (not part of the evaluation input contract)"
        elif first["type"] == "missing":
            message = "required field is missing"
        raise _fail(field_path(loc, path) if loc else path, message) from None


def check_run_record(data: Any, path: str) -> Run:
    """``data`` as a :class:`Run` (structure only: no suite to check it against); the error starts with ``path``."""
    return _model(Run, data, path)


def _unique(values: Sequence[str], path: str, what: str = "value") -> None:
    seen: dict[str, int] = {}
    for i, value in enumerate(values):
        if value in seen:
            raise _fail(f"{path}[{i}]", f"duplicate {what} {value!r} (also at [{seen[value]}])")
        seen[value] = i


def _subset(values: Iterable[str], allowed: set[str], path: str, rule: str) -> None:
    for i, value in enumerate(values):
        if value not in allowed:
            raise _fail(f"{path}[{i}]", f"{value!r} {rule}")


def _list(value: Any, path: str, low: int, high: int, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(path, f"must be a list of {what} objects")
    if not low <= len(value) <= high:
        raise _fail(path, f"must hold {low} to {high} {what}s (got {len(value)})")
    return value


def condition_key(run: Run, judgment: Judgment | None) -> dict[str, Any]:
    """What makes two runs comparable: controls (tools as a set), evaluator and measurement basis."""
    controls = run.controls.model_dump(mode="json")
    controls["tools"] = sorted(set(run.controls.tools))
    return {"controls": controls, "evaluator": judgment.evaluator.model_dump(mode="json") if judgment else None,
            "measurement_basis": run.measurements.basis}


def _check_suite(suite: Suite) -> None:
    if suite.schema_version != 1:
        raise _fail("suite.schema_version", f"must be 1 (got {suite.schema_version})")
    _unique([t.task_id for t in suite.tasks], "suite.tasks", "task_id")
    for i, task in enumerate(suite.tasks):
        path = f"suite.tasks[{i}]"
        if task.gold_answers is not None:
            _unique([g.id for g in task.gold_answers], f"{path}.gold_answers", "gold id")
            for j, gold in enumerate(task.gold_answers):
                _unique(gold.source_ids, f"{path}.gold_answers[{j}].source_ids", "source id")
        _unique(task.scope_source_ids, f"{path}.scope_source_ids", "source id")
        _unique(task.question_ids, f"{path}.question_ids", "question id")


def _check_run(run: Run, path: str, task: Task) -> None:
    _unique(run.controls.tools, f"{path}.controls.tools", "tool")
    _unique([a.answer_id for a in run.answers], f"{path}.answers", "answer_id")
    _unique([c.claim_id for c in run.claims], f"{path}.claims", "claim_id")
    _unique([c.citation_id for c in run.citations], f"{path}.citations", "citation_id")
    claims = {c.claim_id for c in run.claims}
    pairs: dict[tuple[str, str], int] = {}
    for j, citation in enumerate(run.citations):
        if citation.claim_id not in claims:
            raise _fail(f"{path}.citations[{j}].claim_id",
                        f"unknown claim {citation.claim_id!r} (not among this run's claims)")
        pair = (citation.claim_id, citation.source_id)
        if pair in pairs:
            raise _fail(f"{path}.citations[{j}].source_id",
                        f"claim {pair[0]!r} already cites source {pair[1]!r} in citations[{pairs[pair]}]; "
                        "deduplicate claim/source citation pairs before evaluation")
        pairs[pair] = j
    cov, cpath = run.coverage, f"{path}.coverage"
    for name in ("accounted_source_ids", "text_source_ids", "reviewed_source_ids", "answered_question_ids"):
        _unique(getattr(cov, name), f"{cpath}.{name}", "id")
    _subset(cov.reviewed_source_ids, set(cov.text_source_ids), f"{cpath}.reviewed_source_ids",
            "is not in text_source_ids (reviewed ⊆ text ⊆ accounted ⊆ task scope)")
    _subset(cov.text_source_ids, set(cov.accounted_source_ids), f"{cpath}.text_source_ids",
            "is not in accounted_source_ids (reviewed ⊆ text ⊆ accounted ⊆ task scope)")
    _subset(cov.accounted_source_ids, set(task.scope_source_ids), f"{cpath}.accounted_source_ids",
            f"is not in the scope_source_ids of task {task.task_id!r}")
    _subset(cov.answered_question_ids, set(task.question_ids), f"{cpath}.answered_question_ids",
            f"is not in the question_ids of task {task.task_id!r}")


def _check_judgment(judgment: Judgment, path: str, suite: Suite, run: Run, task: Task) -> None:
    if judgment.rubric_id != suite.rubric.id:
        raise _fail(f"{path}.rubric_id", f"{judgment.rubric_id!r} is not the suite rubric id {suite.rubric.id!r}")
    if judgment.rubric_version != suite.rubric.version:
        raise _fail(f"{path}.rubric_version",
                    f"{judgment.rubric_version!r} is not the suite rubric version {suite.rubric.version!r}")
    answers = {a.answer_id for a in run.answers}
    gold = {g.id for g in task.gold_answers or []}
    _unique([m.answer_id for m in judgment.answer_matches], f"{path}.answer_matches", "answer_id")
    for j, match in enumerate(judgment.answer_matches):
        if match.answer_id not in answers:
            raise _fail(f"{path}.answer_matches[{j}].answer_id",
                        f"unknown answer {match.answer_id!r} (not among the answers of run {run.run_id!r})")
        if match.gold_id is not None and match.gold_id not in gold:
            raise _fail(f"{path}.answer_matches[{j}].gold_id",
                        f"unknown gold id {match.gold_id!r} (not among the gold answers of task {task.task_id!r}; "
                        "use null for an incorrect answer)")
    citations = {c.citation_id for c in run.citations}
    _unique([c.citation_id for c in judgment.citation_labels], f"{path}.citation_labels", "citation_id")
    for j, label in enumerate(judgment.citation_labels):
        if label.citation_id not in citations:
            raise _fail(f"{path}.citation_labels[{j}].citation_id",
                        f"unknown citation {label.citation_id!r} (not among the citations of run {run.run_id!r})")
    _unique([s.dimension for s in judgment.report_scores], f"{path}.report_scores", "dimension")
    for j, score in enumerate(judgment.report_scores):
        if score.dimension not in suite.rubric.report_quality:
            raise _fail(f"{path}.report_scores[{j}].dimension",
                        f"{score.dimension!r} is not a report_quality dimension of the suite rubric")


def validate_inputs(suite: Any, runs: Any, judgments: Any = None) -> Inputs:
    """Validate the three inputs; raise one :class:`InvalidInputError` naming the first field at fault."""
    if not isinstance(suite, dict):
        raise _fail("suite", "must be a JSON object")
    parsed_suite: Suite = _model(Suite, suite, "suite")
    _check_suite(parsed_suite)
    tasks = {t.task_id: t for t in parsed_suite.tasks}

    raw_runs = _list(runs, "runs", 1, MAX_RUNS, "run")
    parsed_runs: list[Run] = [_model(Run, raw, f"runs[{i}]") for i, raw in enumerate(raw_runs)]
    _unique([r.run_id for r in parsed_runs], "runs", "run_id")
    for i, run in enumerate(parsed_runs):
        if run.task_id not in tasks:
            raise _fail(f"runs[{i}].task_id", f"unknown task {run.task_id!r} (not in suite.tasks)")
        _check_run(run, f"runs[{i}]", tasks[run.task_id])

    raw_judgments = [] if judgments is None else _list(judgments, "judgments", 0, MAX_JUDGMENTS, "judgment")
    by_run = {r.run_id: r for r in parsed_runs}
    parsed_judgments: dict[str, Judgment] = {}
    index: dict[str, int] = {}
    for i, raw in enumerate(raw_judgments):
        judgment: Judgment = _model(Judgment, raw, f"judgments[{i}]")
        if judgment.run_id not in by_run:
            raise _fail(f"judgments[{i}].run_id", f"unknown run {judgment.run_id!r} (not among the runs)")
        if judgment.run_id in parsed_judgments:
            raise _fail(f"judgments[{i}].run_id", f"duplicate judgment for run {judgment.run_id!r} (also "
                                                  f"judgments[{index[judgment.run_id]}]); give at most one per run")
        run = by_run[judgment.run_id]
        _check_judgment(judgment, f"judgments[{i}]", parsed_suite, run, tasks[run.task_id])
        parsed_judgments[judgment.run_id] = judgment
        index[judgment.run_id] = i

    from bookmark_research.evaluation.hashing import canonical_sha256

    repeats: dict[tuple[str, str, str, str, int], int] = {}
    for i, run in enumerate(parsed_runs):
        condition = canonical_sha256(condition_key(run, parsed_judgments.get(run.run_id)))
        key = (run.task_id, run.system_id, run.mode, condition, run.repeat)
        if key in repeats:
            raise _fail(f"runs[{i}].repeat", f"repeat {run.repeat} is already used by runs[{repeats[key]}] for the "
                                             "same task, system, mode and conditions")
        repeats[key] = i
    return Inputs(parsed_suite, parsed_runs, parsed_judgments, index, suite, raw_runs, raw_judgments)
