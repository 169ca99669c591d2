"""Pydantic input and output models of every core operation.

Input models are strict and closed (``extra="forbid"``): the MCP server derives its tool schemas
from them and the CLI validates through them, so both front ends accept exactly the same requests.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, field_validator

# The base classes, field types and shared outputs, and the query models, live in modules of their own
# so a search or context call builds only what it needs; they are re-exported here.
from bookmark_research.core.base_models import (JSON, Input, Output, Path_, RefreshInfo, SourceRecord, Target, Text,
                                                year_range)
from bookmark_research.core.query_models import (
    AncestorRow,
    BookmarkRow,
    ContextCounts,
    ContextInput,
    ContextOutput,
    SearchCounts,
    SearchInput,
    SearchOutput,
    Snippet,
    TargetPage,
)

# --- sync / sources ---------------------------------------------------------------------------


class SyncInput(Input):
    package_path: Path_ = Field(description="Package directory, .zip export or single section .json")
    source_id: Text | None = Field(None, description="Attach to this source (default: remembered from the path)")
    mode: Literal["snapshot", "live"] | None = Field(None, description="snapshot (frozen copy) or live (followed folder)")
    completeness: Literal["partial", "complete"] | None = Field(
        None, description="partial keeps indexed files missing from the input; complete deletes them")


class Counts(Output):
    items: int
    bookmarks: int
    folders: int
    tree_roots: int
    user_folders: int
    unique_urls: int
    sections: int
    files: int
    nodes: int
    edges: int
    memberships: int


class SyncOutput(Output):
    source_id: str
    created: bool
    mode: str
    completeness: str
    input_path: str
    input_kind: str
    package_path: str
    version_id: str
    snapshot_path: str
    state: str
    changed_files: int
    skipped_files: int
    changed_file_paths: list[str]
    items_inserted: int
    items_updated: int
    items_deleted: int
    retained_missing_files: list[str]
    removed_files: list[str]
    replaced_canvas_files: list[str]
    duplicate_source_ids: list[str]
    warnings: list[str]
    counts: Counts


class SectionSummary(Output):
    section_id: str
    label: str
    kind: str
    is_anchor: bool
    canonical_id: str | None
    file_path: str


class SourceStatus(Output):
    source_id: str
    bookmarks: int
    unique_urls: int
    counts: Counts
    sections: list[SectionSummary]
    source: SourceRecord


class StatusInput(Input):
    source_id: Text | None = None


class StatusOutput(Output):
    database: str
    database_exists: bool
    schema_version: int
    watcher: JSON = Field(description="Whether a watcher (watch or serve) follows live sources of this data dir")
    sources: list[SourceStatus]


class HistoryInput(Input):
    source_id: Text
    limit: int = Field(20, ge=1, le=100)
    offset: int = Field(0, ge=0, le=1_000_000_000)


class Version(Output):
    version_id: str
    created_at: str
    snapshot_path: str
    snapshot_exists: bool
    current: bool
    file_count: int
    input_path: str | None
    input_kind: str | None
    completeness: str | None
    restored_at: str | None = Field(description="When this version was last made current again by a restore")


class Restore(Output):
    restored_at: str
    version_id: str = Field(description="The version made current")
    previous_version_id: str | None = Field(description="The version that was current before")


class HistoryOutput(Output):
    source_id: str
    total: int
    limit: int
    offset: int
    next_offset: int | None
    versions: list[Version]
    restores: list[Restore] = Field(description="Restores, newest first (at most 100)")


class RestoreInput(Input):
    source_id: Text
    version_id: Text


class RemoveInput(Input):
    source_id: Text
    confirm: bool = Field(False, description="Without it, only report what would be removed")


class MergeInput(Input):
    source_id: Text = Field(description="The duplicate, removed by the merge")
    into_source_id: Text = Field(description="The survivor, which takes over the duplicate's paths")
    confirm: bool = Field(False, description="Without it, only report what would happen")


class MergeOutput(Output):
    source_id: str
    into_source_id: str
    status: Literal["confirmation_required", "merged"]
    aliases: list[str]
    impact: str | None = None


class RemoveOutput(Output):
    source_id: str
    status: Literal["confirmation_required", "removed"]
    aliases: list[str]
    would_remove: dict[str, int] | None = None
    removed: dict[str, int] | None = None
    snapshot_directory: str | None = None
    snapshot_removed: bool | None = None
    impact: str | None = None


# --- query (search and context: query_models.py) ----------------------------------------------


class DoctorInput(Input):
    pass


class DoctorOutput(Output):
    python: str
    sqlite: str
    fts5: bool
    trigram: bool
    json1: bool
    data_dir: str
    data_dir_exists: bool = Field(description="False until the first sync creates it")
    database: str
    database_exists: bool
    data_dir_writable: bool
    database_writable: bool | None
    ready: bool
    problems: list[str]
    next_step: str | None


# --- settings ---------------------------------------------------------------------------------


class GetSettingsInput(Input):
    pass


class SettingsOutput(Output):
    path: str
    exists: bool
    settings: JSON = Field(description="Effective settings; credentials only as configured/source, never values")
    valid_keys: list[str]


class UpdateSettingsInput(Input):
    changes: dict[Annotated[str, StringConstraints(min_length=1, max_length=100)], Any] = Field(
        min_length=1, max_length=50,
        description="Dotted keys to new values, e.g. {\"fetch.max_characters\": 20000}; null resets. Credentials "
                    "and changes that weaken a safety guard are refused (terminal only)")


class SetSettingInput(Input):
    key: Text
    value: Any = None


# --- evidence ---------------------------------------------------------------------------------


class SearchArchiveInput(Input):
    query: Annotated[str, StringConstraints(min_length=1, max_length=500, pattern=r"^[^\x00]*\S[^\x00]*$")]
    url: Annotated[str, StringConstraints(min_length=1, max_length=2048)] | None = Field(
        None, description="Only pages fetched from URLs containing this text")
    limit: int = Field(10, ge=1, le=50)
    offset: int = Field(0, ge=0, le=10_000_000)


class ArchiveHit(Output):
    sha256: str
    characters: int
    score: float
    body_path: str
    snippet: str | None
    occurrences: list[JSON]


class SearchArchiveOutput(Output):
    query: str
    total: int
    limit: int
    offset: int
    next_offset: int | None
    results: list[ArchiveHit]


class FetchWebInput(Input):
    urls: list[Annotated[str, StringConstraints(min_length=1, max_length=8192)]] = Field(min_length=1, max_length=8)
    provider: Literal["exa", "parallel", "tavily", "jina", "direct"] | None = Field(
        None, description="Exactly one attempt with this provider; omitted: the fetch waterfall from settings")
    max_characters: int | None = Field(None, ge=100, le=100_000)
    archive: bool | None = Field(None, description="Keep what was read in the evidence archive (default: settings)")
    raw: bool = Field(False, description="Include the providers' raw responses")


class FetchedPage(Output):
    url: str
    provider: str | None
    status: Literal["ok", "unverified", "error"]
    returned_url: str | None
    title: str | None
    extraction_status: str
    content_kind: str
    characters: int
    possibly_truncated: bool
    http_status: int | None
    error: str | None
    error_kind: str | None
    text: str
    author: str | None = Field(None, description="Author(s) as the page states them")
    published_at: str | None = Field(None, description="Publication date the page states (YYYY-MM-DD)")
    site_name: str | None = None
    language: str | None = Field(None, description="Language tag the page declares (e.g. en, zh-CN)")
    capture_id: str | None
    sha256: str | None
    body_path: str | None
    reasons: list[str] = Field(default_factory=list,
                               description="Why it was not read: one 'provider: reason' per provider tried")


class FetchWebOutput(Output):
    mode: Literal["single", "waterfall"]
    providers: list[str]
    urls: list[str]
    status: Literal["ok", "partial", "error"]
    successful_url_count: int
    unresolved_urls: list[str]
    archive_enabled: bool
    pages: list[FetchedPage]
    attempts: list[JSON]


class WebTarget(Input):
    target: Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"\S")]
    query: Annotated[str, StringConstraints(min_length=1, max_length=2000, pattern=r"\S")]


class SearchWebInput(Input):
    targets: list[WebTarget] = Field(min_length=1, max_length=12)
    providers: list[Literal["exa", "parallel", "tavily", "jina"]] | None = Field(
        None, min_length=1, max_length=4, description="Only these providers, no fallback (default: settings)")
    limit_per_target: int | None = Field(None, ge=1, le=20)


class SearchWebOutput(Output):
    targets: list[JSON]
    batches: list[JSON]
    routing: JSON
    unresolved_queries: list[JSON]
    successful_provider_count: int
    providers: list[str]
    limit_per_target: int
    ranking: JSON
    errors: list[JSON]


class ProvidersInput(Input):
    probe: bool = Field(False, description="Contact the remote MCP providers and list their tools")


class ProvidersOutput(Output):
    probe_performed: bool
    providers: list[JSON]
    search_order: JSON
    fetch_order: list[str]
    note: str


Scholarly = Literal["openalex", "semantic_scholar", "crossref", "pubmed", "arxiv"]
Year = Annotated[int, Field(ge=1500, le=2100)]


_year_range = year_range  # shared with the research search model (core.base_models)


class LiteratureInput(Input):
    query: Annotated[str, StringConstraints(min_length=1, max_length=1000, pattern=r"\S")]
    providers: list[Scholarly] | None = Field(None, min_length=1, max_length=5)
    mode: Literal["auto", "topic", "title", "doi", "review", "systematic_review"] = "auto"
    per_provider_limit: int | None = Field(None, ge=1, le=200, description="Default 25; 50 for review modes")
    total_limit: int = Field(100, ge=1, le=1000)
    from_year: Year | None = None
    to_year: Year | None = None

    _years = field_validator("to_year")(_year_range)


class LiteratureRecord(Output):
    id: str | None
    title: str | None
    authors: list[str | None]
    year: int | None
    venue: str | None
    doi: str | None
    url: str | None
    abstract: str | None
    providers: list[str]
    ids: dict[str, str | None]
    retrieved_at: str


class LiteratureOutput(Output):
    query: str
    mode: str
    status: Literal["ok", "warning", "error"]
    total: int
    records: list[LiteratureRecord]
    routing: JSON
    diagnostics: JSON
    per_provider_limit: int
    total_limit: int
    dedupe: str


class SearchPlanInput(Input):
    query: Annotated[str, StringConstraints(min_length=1, max_length=1000, pattern=r"\S")]
    platform: Text | None = None
    native_search_available: bool = False
    native_search_tools: list[Text] = Field(default_factory=list, max_length=20)
    include_working_papers: bool = False
    from_year: Year | None = None
    to_year: Year | None = None
    offline: bool = Field(False, description="Plan without any provider calls")

    _years = field_validator("to_year")(_year_range)


class SearchPlanOutput(Output):
    query: str
    search_execution_mode: Literal["hybrid_search", "provider_connected", "native_only", "strategy_only"]
    routing: JSON
    provider_queries: list[JSON]
    native_queries: list[JSON]
    merge_policy: JSON
    limitations: list[str]
