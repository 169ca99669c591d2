"""What a session's ``state.json`` must hold before any step trusts it.

``state.json`` is readable and editable (the agent's ``work/`` folder sits next to it), so every load
checks it against this schema: the types and values the research code relies on, budgets within the hard
caps, and the id of every record. A hand edit that breaks it is refused with one line naming the field
(``…/state.json: not a research session state (field usage.fetch_calls: …)``) instead of an internal
error, and a budget raised above its cap is never honoured. Records keep fields this schema does not name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from typing_extensions import NotRequired, TypedDict

from bookmark_research.canvas.validation import field_path
from bookmark_research.errors import StorageError
from bookmark_research.research.operations import CAPS

Count = Annotated[int, Field(ge=0)]
Id = Annotated[str, Field(min_length=1, max_length=200)]


class _Record(TypedDict):
    """A record of the state: the fields below are checked, any others kept as they are. (TypedDicts, not
    models: a 4 MB state with thousands of claims validates in a few milliseconds.)"""

    __pydantic_config__ = ConfigDict(extra="allow", strict=True)  # type: ignore[misc]


class Budget(_Record):
    max_search_calls: Annotated[int, Field(ge=0, le=CAPS["max_search_calls"])]
    max_fetch_calls: Annotated[int, Field(ge=0, le=CAPS["max_fetch_calls"])]
    max_rounds: Annotated[int, Field(ge=0, le=CAPS["max_rounds"])]


class Usage(_Record):
    search_calls: Count
    fetch_calls: Count
    rounds: Count


class Scope(_Record):
    mode: Literal["whole", "subset", "questions"]
    input_version: str
    selected_inventory_ids: list[str]
    input_url_count: Count
    selected_url_count: Count
    input_instance_count: Count
    selected_instance_count: Count


class Question(_Record):
    id: Id
    question: str
    status: Literal["open", "answered", "unresolved"]
    answer: str | None
    claim_ids: list[str]
    gap: str | None


class Span(_Record):
    start: Count
    end: Count


class Citation(_Record):
    source_id: str
    quote: str
    span: NotRequired[Span | None]
    found_text: NotRequired[str | None]


class Claim(_Record):
    id: Id
    question_id: str
    statement: str
    citations: list[Citation]
    confidence: Literal["low", "medium", "high"]
    inference: bool
    status: Literal["active", "retracted"]


class Resolution(_Record):
    text: str
    claim_ids: list[str]


class Conflict(_Record):
    id: Id
    status: Literal["open", "resolved"]
    claim_ids: list[str]
    text: str
    resolution: Resolution | None


class Review(_Record):
    verdict: Literal["unreviewed", "accepted", "rejected", "uncertain"]
    text: str | None


class Source(_Record):
    id: Id
    url: str
    provider: str | None
    extraction_status: str
    evidence_kind: str
    content_kind: str
    sha256: str | None
    characters: Count
    body_file: str | None
    manifest_file: str | None
    response_file: str | None
    review: Review
    inventory_ids: list[str]
    bookmark_refs: NotRequired[list[dict[str, Any]]]
    instance_ids: NotRequired[list[str]]


class Operation(_Record):
    id: Id
    kind: Literal["search", "fetch", "import_evidence"]
    digest: str
    status: Literal["pending", "ok", "partial", "error", "unknown_outcome"]
    reserved: dict[str, Count]
    result_file: NotRequired[str | None]


class InventoryReview(_Record):
    id: Id
    inventory_id: str
    disposition: Literal["reviewed", "excluded", "blocked"]
    text: str
    question_ids: NotRequired[list[str]]
    source_ids: NotRequired[list[str]]
    claim_ids: NotRequired[list[str]]
    citations: NotRequired[list[Citation]]


class ExternalRun(_Record):
    id: Id
    provider: str
    run_id: str
    status: str
    text: str
    result_file: NotRequired[str | None]


class Event(_Record):
    at: str
    kind: str
    value: Any


class Batch(_Record):
    digest: str
    result: dict[str, Any]


class State(_Record):
    schema_version: Literal[2]
    research_id: str
    status: Literal["active", "incomplete", "completed", "cancelled"]
    brief: str
    scope: str
    source_ids: list[str]
    providers: list[str]
    search_fallback_providers: list[str]
    fetch_providers: Annotated[list[str], Field(min_length=1)]
    scholarly_providers: NotRequired[list[str]]
    source_scope: Scope
    inventory_manifest_sha256: str
    context_manifest_sha256: NotRequired[str | None]
    inventory_reviews: list[InventoryReview]
    external_runs: list[ExternalRun]
    created_at: str
    updated_at: str
    budget: Budget
    initial_fetch_plan: dict[str, Any]
    usage: Usage
    questions: Annotated[list[Question], Field(min_length=1)]
    claims: list[Claim]
    conflicts: list[Conflict]
    sources: list[Source]
    operations: list[Operation]
    events: list[Event]
    output: NotRequired[dict[str, Any] | None]
    record_batches: NotRequired[dict[str, Batch]]
    summary: NotRequired[str | None]
    limitations: NotRequired[list[str] | None]
    finished_at: NotRequired[str | None]
    artifacts: NotRequired[dict[str, str] | None]


_STATE = TypeAdapter(State)


def check(state: Any, path: Path) -> None:
    """Raise a one-line :class:`StorageError` naming the first field of ``state`` that breaks the schema."""
    try:
        _STATE.validate_python(state)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = field_path(tuple(first["loc"]))
        raise StorageError(f"{path}: not a research session state (field {where}: {first['msg']})") from None
    ids = [("questions", [q["id"] for q in state["questions"]]), ("claims", [c["id"] for c in state["claims"]]),
           ("sources", [s["id"] for s in state["sources"]]), ("operations", [o["id"] for o in state["operations"]]),
           ("conflicts", [x["id"] for x in state["conflicts"]])]
    for section, values in ids:
        if len(set(values)) != len(values):
            raise StorageError(f"{path}: not a research session state (field {section}: ids repeat)")
