"""Input and output models of the research-session operations (closed inputs, as everywhere)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationInfo, field_validator

from bookmark_research.core.base_models import JSON, Input, Output, Path_, Text, year_range

ResearchId = Annotated[str, StringConstraints(pattern=r"^r-[0-9a-f]{16}$")]
Ident = Annotated[str, StringConstraints(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
Url = Annotated[str, StringConstraints(min_length=1, max_length=8192)]
Offset = Annotated[int, Field(ge=0, le=10_000_000)]
RID = Field(description="Session id (r- and 16 hex), from research_start")
OPERATION_ID = Field(description="Your id for this step ([A-Za-z0-9][A-Za-z0-9_.-]*, ≤80). Repeating the same id "
                                 "with the same arguments replays the saved result without a new provider call.")
WebProvider = Literal["exa", "parallel", "tavily", "jina"]
FetchProvider = Literal["exa", "parallel", "tavily", "jina", "direct"]
ScholarlyProvider = Literal["openalex", "semantic_scholar", "crossref", "pubmed", "arxiv"]


class QuestionIn(Input):
    id: Ident
    question: Annotated[str, StringConstraints(min_length=1, max_length=4000)]


class BookmarkRef(Input):
    source_id: Text
    section_id: Text = Field(description="Section id, label or file path (of the tree or of a copy showing it)")
    item_id: Text


class Budget(Input):
    max_search_calls: int | None = Field(None, ge=0, le=120, description="Default 16")
    max_fetch_calls: int | None = Field(None, ge=0, le=80, description="Default 12, or grown to the scope (≤80)")
    max_rounds: int | None = Field(None, ge=0, le=40, description="Default 8; one per research_search call")


class ResearchStartInput(Input):
    brief: Annotated[str, StringConstraints(min_length=1, max_length=12_000)] = Field(
        description="The task statement (put output-language requirements here)")
    questions: list[QuestionIn] = Field(min_length=1, max_length=24)
    scope: Annotated[str, StringConstraints(max_length=12_000)] = Field(
        "", description="Free text; stays local, never sent to providers")
    providers: list[FetchProvider] | None = Field(
        None, min_length=1, max_length=5, description="Search and fetch providers of this session, no search "
        "fallbacks (default: settings search.providers + fallbacks, fetch.providers). 'direct' fetches only.")
    source_ids: list[Text] | None = Field(None, max_length=100, description="Indexed sources to freeze")
    urls: list[Url] | None = Field(None, min_length=1, max_length=10_000, description="A plain bookmark list "
                                   "(instead of source_ids/bookmark_refs); non-web entries stay in scope")
    scope_mode: Literal["whole", "subset"] | None = Field(
        None, description="whole (default): every inventory entry; subset: only inventory_ids or bookmark_refs")
    inventory_ids: list[Annotated[str, StringConstraints(min_length=1, max_length=80)]] | None = Field(
        None, min_length=1, max_length=10_000)
    bookmark_refs: list[BookmarkRef] | None = Field(
        None, max_length=100, description="Exact bookmarks; in whole mode they only mark focus")
    budget: Budget | None = None
    output_directory: Path_ | None = Field(None, description="Absolute folder for this session (outside packages)")


class ResearchOverview(Output):
    research_id: str
    directory: str
    work_directory: str
    status: str
    brief: str
    scope: str
    source_ids: list[str]
    providers: list[str]
    search_fallback_providers: list[str]
    fetch_providers: list[str]
    scholarly_providers: list[str]
    context_manifest: str
    inventory_manifest: str | None
    source_scope: JSON
    coverage: JSON
    created_at: str
    updated_at: str
    budget: JSON
    usage: JSON
    remaining: JSON
    initial_fetch_plan: JSON
    questions: list[JSON]
    claims: list[JSON]
    conflicts: list[JSON]
    sources: list[JSON]
    operations: list[JSON]
    bookmark_context: list[JSON]
    inventory: list[JSON]
    inventory_reviews: list[JSON]
    external_runs: list[JSON]
    counts: JSON
    pagination: JSON
    detail_note: str
    artifacts: JSON | None
    execution: str
    budget_unit: str
    evidence_note: str
    summary: str | None = None
    limitations: list[str] | None = None
    finished_at: str | None = None
    output: JSON | None = None
    source_freshness: JSON | None = None
    wiki_follow_up: JSON | None = None


class ResearchStatusInput(Input):
    research_id: ResearchId | None = Field(None, description="Omit to list every session")
    section: Literal["questions", "claims", "sources", "operations", "conflicts", "bookmark_context", "events",
                     "inventory", "inventory_reviews", "external_runs"] | None = Field(
        None, description="Page through one section instead of the overview")
    offset: Offset = 0
    limit: int = Field(20, ge=1, le=100)


class ResearchStatusOutput(Output):
    """An overview (with research_id), one section page (with section) or the session list (neither)."""

    model_config = ConfigDict(extra="allow", defer_build=True)
    research_id: str | None = None
    section: str | None = None
    items: list[JSON] | None = None
    sessions: list[JSON] | None = None
    directory: str | None = None
    total: int | None = None
    offset: int | None = None
    next_offset: int | None = None


class ResearchInventoryInput(Input):
    research_id: ResearchId = RID
    inventory_ids: list[Annotated[str, StringConstraints(min_length=1, max_length=80)]] | None = Field(
        None, description="1 to 100 ids to read (default: page through the selected scope)")
    offset: Offset = 0
    limit: int = Field(100, ge=1, le=100)


class ResearchInventoryOutput(Output):
    research_id: str
    available: bool
    source_scope: JSON
    scope_total: int
    manifest_path: str
    items: list[JSON]
    inventory_ids: list[str]
    offset: int
    total: int
    next_offset: int | None


class ResearchSourceInput(Input):
    research_id: ResearchId = RID
    source_id: Annotated[str, StringConstraints(min_length=1, max_length=32)]
    offset: Offset = 0
    limit: int = Field(12_000, ge=1, le=50_000)


class ResearchSourceOutput(Output):
    research_id: str
    source: JSON
    offset: int
    text: str
    total_characters: int
    next_offset: int | None


class Provenance(BaseModel):
    """Where an imported text came from (further fields are kept as given; ≤64,000 characters of JSON)."""

    model_config = ConfigDict(extra="allow", strict=True, defer_build=True)
    kind: Literal["page", "archived_page", "local_document", "external_report"]
    provider: Annotated[str, StringConstraints(max_length=512)] | None = None
    retrieved_at: Annotated[str, StringConstraints(max_length=64)] | None = None
    published_at: Annotated[str, StringConstraints(max_length=64)] | None = None
    run_id: Annotated[str, StringConstraints(max_length=2000)] | None = None
    text_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")] | None = None


class ResearchImportInput(Input):
    research_id: ResearchId = RID
    operation_id: Ident = OPERATION_ID
    question_id: Ident
    url: Url = Field(description="http(s) page URL; file:// for local documents; any label for external reports")
    text: Annotated[str, StringConstraints(min_length=1, max_length=200_000)] = Field(
        description="The text exactly as read; quotes will be verified against it")
    provenance: Provenance
    inventory_ids: list[Annotated[str, StringConstraints(min_length=1, max_length=80)]] | None = Field(
        None, max_length=100, description="Inventory entries this page is (default: found by URL)")
    title: Annotated[str, StringConstraints(max_length=2000)] | None = None


class ResearchEvidenceOutput(Output):
    """The receipt of a search, fetch or import operation (replays return the same receipt)."""

    model_config = ConfigDict(extra="allow", defer_build=True)
    research_id: str
    operation_id: str
    replayed: bool
    status: str


ENTRY_HELP = (
    "One record: {kind, ...fields}. claim {question_id, statement, citations:[{source_id, quote}] (1-12), "
    "confidence?: low|medium|high, inference?: bool}; answer {question_id, answer, claim_ids}; gap {question_id, "
    "text}; question {id, question}; conflict {claim_ids (≥2), text}; resolution {conflict_id, claim_ids, text}; "
    "source_review {source_id, verdict: accepted|rejected|uncertain, text}; retraction {claim_id, text}; "
    "inventory_review {inventory_id, disposition: reviewed|excluded|blocked, text, question_ids?, source_ids?, "
    "claim_ids?, citations?, reason_code?: out_of_scope|non_content}; external_run {id, provider, run_id, status, "
    "text, result?, artifact_path?}; interruption {operation_id, text}; resume {text}. Quotes must stand in the "
    "saved text exactly or after normalisation (Unicode NFKC, whitespace, quote/dash/ellipsis variants, soft "
    "hyphens and zero-width characters; line-leading Markdown block markers and table pipes, so a quote may run "
    "across list items or table cells).")


class ResearchRecordInput(Input):
    research_id: ResearchId = RID
    entry: dict[str, Any] | None = Field(None, description=ENTRY_HELP)
    entries: list[Any] | None = Field(None, description="1 to 50 entries applied in order, all or nothing "
                                      "(resume and external_run only as a single entry)")
    batch_id: Ident | None = Field(None, description="Makes an entries batch replayable: the same id and entries "
                                   "return the saved result")


class ResearchRecordOutput(Output):
    research_id: str
    replayed: bool
    kind: str | None = None
    id: str | None = None
    recorded: JSON | None = None
    count: int | None = None
    results: list[JSON] | None = None
    batch_id: str | None = None


class ResearchCoverageInput(Input):
    research_id: ResearchId = RID
    filter: Literal["all", "missing", "unread", "unreviewed", "blocked", "excluded", "reviewed"] = "all"
    offset: Offset = 0
    limit: int = Field(100, ge=1, le=100)


class ResearchCoverageOutput(Output):
    research_id: str
    filter: str
    scope_total: int
    available: bool
    source_scope: JSON
    legacy_note: str | None
    metrics: JSON
    difference_counts: JSON
    completion_ready: bool
    completion_blockers: list[str]
    questions: list[JSON]
    items: list[JSON]
    inventory_ids: list[str]
    offset: int
    total: int
    next_offset: int | None


class ResearchFinishInput(Input):
    research_id: ResearchId = RID
    summary: Annotated[str, StringConstraints(min_length=1, max_length=16_000)]
    status: Literal["completed", "incomplete", "cancelled"] = "completed"
    limitations: list[Annotated[str, StringConstraints(min_length=1, max_length=4000)]] = Field(
        default_factory=list, max_length=100)


class QueryIn(Input):
    question_id: Ident
    query: Annotated[str, StringConstraints(min_length=1, max_length=2000, pattern=r"\S")]


class ResearchSearchInput(Input):
    research_id: ResearchId = RID
    operation_id: Ident = OPERATION_ID
    queries: list[QueryIn] = Field(min_length=1, max_length=12)
    kind: Literal["web", "scholarly"] = Field(
        "web", description="web: the session's web providers (snippets only, never citable); scholarly: "
        "literature providers, each record becomes a source with DOI, venue, year and abstract")
    providers: list[WebProvider | ScholarlyProvider] | None = Field(
        None, min_length=1, max_length=5, description="Only these providers, no fallback (web names for "
        "kind=web, scholarly names for kind=scholarly)")
    limit_per_target: int = Field(5, ge=1, le=20)
    from_year: int | None = Field(None, ge=1000, le=2100, description="kind=scholarly only")
    to_year: int | None = Field(None, ge=1000, le=2100, description="kind=scholarly only; not before from_year")

    @field_validator("from_year", "to_year")
    @classmethod
    def _scholarly_years(cls, year: int | None, info: ValidationInfo) -> int | None:
        if year is not None and info.data.get("kind") == "web":
            raise ValueError("years apply to kind=scholarly only")
        return year_range(year, info) if info.field_name == "to_year" else year


class ResearchFetchInput(Input):
    research_id: ResearchId = RID
    operation_id: Ident = OPERATION_ID
    question_id: Ident
    urls: list[Url] = Field(min_length=1, max_length=8)
    provider: FetchProvider | None = Field(None, description="Only this provider (default: the session's "
                                           "fetch waterfall)")
    max_characters: int = Field(12_000, ge=100, le=100_000)
    reuse_archive: bool = Field(True, description="Take pages already read into the evidence archive from there "
                                "(no budget, no network; the source says so)")


class ResearchRouteInput(Input):
    depth: Literal["auto", "quick", "agentic", "deep"] = "auto"
    host: Literal["codex", "claude_code", "pi", "dsh", "unknown"] = "unknown"
    task_shape: Literal["lookup", "investigation", "batch_research"] | None = None
    observed_tools: list[Annotated[str, StringConstraints(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=200)
    available_commands: list[Annotated[str, StringConstraints(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=200)
    installed_extensions: list[Annotated[str, StringConstraints(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=200)
    failed_routes: list[Annotated[str, StringConstraints(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=50)
    provider: Literal["openai", "parallel"] | None = None


class ResearchRouteOutput(Output):
    selected: JSON | None
    candidates: list[JSON]
    next_action: str
    workflow: list[str]
    research_process: list[str]
    fallback: JSON
    retrieval: JSON
    depth: str
    execution_started: bool
    configuration_changed: bool


class ResearchReportInput(Input):
    research_id: ResearchId = RID


class ResearchReportOutput(Output):
    research_id: str
    status: str
    path: str
    sha256: str
    text: str
    artifacts: JSON
