"""Input and output models of the evaluation operations (``evaluate_research``, ``evaluation_run_from_session``).

The evaluation's own input contract (suite, runs, judgments) is validated field by field in
:mod:`bookmark_research.evaluation.inputs`, so one failure names its path (``runs[3].citations[1].claim_id``);
the operation input here only bounds the payload, and publishes that contract's models as the JSON schema
of ``suite``, ``runs`` and ``judgments`` (:class:`SchemaOf`), so an MCP client learns every field from
``tools/list``. ``output`` (where files are written) is terminal-only: the MCP server neither lists nor accepts it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, GetJsonSchemaHandler, StringConstraints
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from bookmark_research.core.base_models import JSON, Input, Output, Path_
from bookmark_research.core.research_models import ResearchId
from bookmark_research.evaluation.inputs import Judgment, Run, Suite

Ident = Annotated[str, StringConstraints(min_length=1, max_length=300, pattern=r"^[^\x00]*\S[^\x00]*$")]


class SchemaOf:
    """Publish ``model``'s JSON schema for a field validated as plain JSON (the evaluation checks it later,
    with its own field-path messages)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def __get_pydantic_json_schema__(self, _core: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return handler(self.model.__pydantic_core_schema__)


class EvaluateInput(Input):
    suite: Annotated[JSON, SchemaOf(Suite)] = Field(
        description="The suite: schema_version 1, suite_id, kind, tasks (task_id, prompt, gold_answers or null, "
                    "scope_source_ids, question_ids) and rubric (id, version, answer_matching, citation_support, "
                    "report_quality)")
    runs: Annotated[list[Annotated[JSON, SchemaOf(Run)]], Field(min_length=1, max_length=1000)] = Field(
        description="Research run records to score (1-1000); each run's task_id must be one of the suite's tasks")
    judgments: Annotated[list[Annotated[JSON, SchemaOf(Judgment)]], Field(max_length=1000)] = Field(
        default_factory=list, description="At most one judgment (answer matches, citation labels, report scores) per run")
    output: Path_ | None = Field(None, description="Terminal only (evaluate --output DIR): absolute folder for "
                                                   "evaluation.json and evaluation.md (created if needed)")


class Stat(Output):
    n: int
    mean: float | None
    sample_variance: float | None
    sample_stddev: float | None
    min: float | None
    max: float | None


def _metric_model(name: str, value: Any) -> type[Output]:
    from pydantic import create_model

    from bookmark_research.evaluation.metrics import METRICS

    return create_model(name, __base__=Output, **{m: (value, ...) for m in METRICS})  # type: ignore[call-overload]


RunMetrics = _metric_model("RunMetrics", float | None)
StratumMetrics = _metric_model("StratumMetrics", Stat)


class AnswerCounts(Output):
    status: Literal["scored", "missing_gold", "missing_annotations"]
    gold_count: int | None
    prediction_count: int
    annotated_count: int
    true_positives: int | None
    false_positives: int | None
    false_negatives: int | None
    duplicate_gold_matches: int


class CitationCounts(Output):
    total: int
    judged: int
    judgment_coverage: float | None
    supported: int
    unsupported: int
    uncertain: int
    accuracy_over_judged: float | None
    semantic_accuracy_requires_all_labels: bool


class ReportQuality(Output):
    scored_dimensions: int
    required_dimensions: int
    complete: bool


class CoverageEntry(Output):
    count: int
    rate: float | None
    missing_ids: list[str]
    missing_count: int


class CoverageCounts(Output):
    original_source_count: int
    original_question_count: int
    accounted: CoverageEntry
    text: CoverageEntry
    reviewed: CoverageEntry
    questions: CoverageEntry


class RunRow(Output):
    run_id: str
    task_id: str
    system_id: str
    mode: str
    run_sha256: str
    judgment_sha256: str | None
    status: Literal["completed", "incomplete", "failed"]
    repeat: int
    comparison_group: str
    condition_id: str
    external_run_id: str | None
    controls: JSON
    evaluator: JSON | None
    measurements: JSON
    answers: AnswerCounts
    citations: CitationCounts
    report_quality: ReportQuality
    coverage: CoverageCounts
    metrics: RunMetrics  # type: ignore[valid-type]


class Comparability(Output):
    controlled: bool
    differences: list[str]
    note: str


class Stratum(Output):
    system_id: str
    mode: str
    condition_id: str
    run_ids: list[str]
    run_count: int
    failed_runs: int
    incomplete_runs: int
    controls: JSON
    evaluator: JSON | None
    measurement_basis: str
    metrics: StratumMetrics  # type: ignore[valid-type]


class Group(Output):
    task_id: str
    comparison_group: str
    run_ids: list[str]
    run_count: int
    comparability: Comparability
    strata: list[Stratum]


class NotScored(Output):
    run_id: str
    task_id: str
    system_id: str
    mode: str
    status: str
    null_metrics: list[str]
    reasons: list[str]


class EvaluateOutput(Output):
    schema_version: int
    suite_id: str
    suite_sha256: str
    runs_sha256: str
    judgments_sha256: str
    kind: Literal["synthetic_demonstration", "annotated_run_evaluation"]
    provider_quality_claim: bool
    run_count: int
    task_count: int
    evaluated_task_count: int
    judgment_count: int
    rubric: JSON
    runs: list[RunRow]
    groups: list[Group]
    not_scored: list[NotScored]
    limitations: list[str]
    artifacts: dict[str, str] | None = Field(
        None, description="The evaluation.json and evaluation.md written (only with output, from a terminal)")


class RunFromSessionInput(Input):
    research_id: ResearchId = Field(
        description="A finished research session (r- and 16 hex; completed, incomplete or cancelled)")
    system_id: Ident = Field(description="The system that ran it (e.g. the agent or prompt setup)")
    mode: Ident = Field(description="Its mode (e.g. direct, workflow)")
    comparison_group: Ident = Field(description="Runs meant to be compared share a comparison group")
    task_id: Ident | None = Field(None, description="The suite task (default: the research id)")
    run_id: Ident | None = Field(None, description="The run id (default: the research id)")
    repeat: Annotated[int, Field(ge=1, le=100_000)] = Field(1, description="Repeat number under these conditions")
    model: Annotated[str, StringConstraints(min_length=1, max_length=4000)] | None = Field(
        None, description="The model that ran the session, as a declared control")
    time_window: Annotated[str, StringConstraints(min_length=1, max_length=4000)] | None = Field(
        None, description="The retrieval time window, as a declared control")
    harness_version: Annotated[str, StringConstraints(min_length=1, max_length=4000)] | None = Field(
        None, description="The harness version (default: this bookmark-research version)")
    output: Path_ | None = Field(None, description="Terminal only (evaluate run-from-session --output FILE): the "
                                                   "runs file to add the run to (a run with the same run_id is replaced)")


class RunFromSessionOutput(Output):
    research_id: str
    run: JSON
    task: JSON
    notes: list[str]
    output_file: str | None = Field(None, description="The runs file the run was added to (only with output)")
    replaced: bool | None = Field(None, description="A run with the same run_id was replaced (only with output)")
    run_count: int | None = Field(None, description="Runs in the file afterwards (only with output)")
