"""Pydantic input and output models of every core operation.

Input models are strict and closed (``extra="forbid"``): the MCP server derives its tool schemas
from them and the CLI validates through them, so both front ends accept exactly the same requests.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationInfo, field_validator

from bookmark_research.canvas.models import TAG_COLORS

Text = Annotated[str, StringConstraints(min_length=1, max_length=512, pattern=r"^[^\x00]*\S[^\x00]*$")]
Target = Annotated[str, StringConstraints(min_length=1, max_length=2048, pattern=r"^[^\x00]*\S[^\x00]*$")]
Path_ = Annotated[str, StringConstraints(min_length=1, max_length=4096, pattern=r"^[^\x00]+$")]
JSON = dict[str, Any]


class Input(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class Output(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first use: keeps CLI start-up short


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


class SourceRecord(Output):
    source_id: str
    mode: str
    completeness: str
    state: str
    input_path: str | None
    input_kind: str | None
    input_exists: bool
    package_path: str | None
    version_id: str | None
    snapshot_path: str | None
    snapshot_exists: bool
    created_at: str
    last_sync: str | None
    retained_missing_files: list[str]
    aliases: list[str]
    pending_files: list[str] = Field(default_factory=list, description="Live: changes seen, not yet applied")
    pending_since: str | None = None
    error: str | None = Field(None, description="Live: why the folder could not be indexed (last good index kept)")
    checked_at: str | None = None


class RefreshInfo(Output):
    """How fresh a query's data is."""

    requested: bool
    performed: bool = Field(description="The live folder was checked before answering")
    index_updated: bool = Field(description="The check re-synced changed files")
    mode: Literal["checked_package", "saved_snapshot"]
    state: str
    pending_files: list[str] = Field(default_factory=list)
    note: str | None = None


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


# --- query ------------------------------------------------------------------------------------


class SearchInput(Input):
    source_id: Text
    targets: list[Target] = Field(default_factory=list, max_length=100,
                                  description="Each target is its own query; terms inside a target are ANDed")
    section: Text | None = Field(None, description="Section id, label, slot or file path")
    group_id: Text | None = Field(None, description="Group node id or unique group label")
    folder_id: Text | None = Field(None, description="Folder item id: restrict to its subtree")
    tags: list[Target] = Field(default_factory=list, max_length=100, description="Every tag text must be present")
    tag_colors: list[Literal[TAG_COLORS]] = Field(  # type: ignore[valid-type]
        default_factory=list, max_length=20, description="Every tag colour must be present")
    item_types: list[Literal["bookmark", "folder"]] = Field(default_factory=lambda: ["bookmark"], min_length=1, max_length=2)
    limit: int = Field(20, ge=0, le=1000)
    offset: int = Field(0, ge=0, le=1_000_000_000)
    count_only: bool = False
    order: Literal["relevance", "tree"] = Field("relevance", description="BM25 relevance or the canvas tree order")
    refresh: bool = Field(True, description="Check a live source's folder first (false: read the last index as is)")
    content: bool = Field(False, description="Match the archived text of the bookmarked pages instead of their fields")
    compact: bool = Field(False, description="Rows once in a shared map; result lists become references (r1, r2, …)")

    @field_validator("item_types")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("item_types must not repeat a value")
        return value


class Snippet(Output):
    field: str
    text: str


class AncestorRow(Output):
    """An item's ancestor, root first: a full record without its own path (the titles of the
    ancestors before it; the item's ``path`` holds the whole chain once)."""

    source_id: str
    section_id: str
    item_id: str
    source: str
    section: str
    item: str
    parent_id: str | None
    item_type: str
    position: int
    preorder: int
    depth: int = Field(description="0 for the tree root, then one more per level")
    title: str
    url: str
    note: str
    note_color: str | None
    tags: list[JSON]
    raw_json: JSON
    metadata: JSON
    revision: int
    section_label: str
    file_path: str
    synthetic: bool | None = None
    shown_in_anchors: list[str] | None = None


class BookmarkRow(Output):
    source_id: str
    section_id: str
    item_id: str
    source: str
    section: str
    item: str
    parent_id: str | None
    item_type: str
    position: int
    preorder: int
    title: str
    url: str
    note: str
    note_color: str | None
    tags: list[JSON]
    path: list[str]
    folder_path: str
    raw_json: JSON
    metadata: JSON
    revision: int
    section_label: str
    file_path: str
    synthetic: bool | None = None
    shown_in_anchors: list[str] | None = None
    score: float | None = None
    snippet: Snippet | None = None
    ancestors: list[AncestorRow] | None = None


class TargetPage(Output):
    target: str
    total: int
    unique_urls: int
    limit: int
    offset: int
    next_offset: int | None
    results: list[BookmarkRow]
    result_refs: list[str] | None = None


class SearchCounts(Output):
    instances: int
    unique_urls: int
    note: str


class SearchOutput(Output):
    source_id: str
    total: int
    unique_urls: int
    limit: int
    offset: int
    next_offset: int | None
    order: str
    ranking: str
    results: list[BookmarkRow]
    targets: list[TargetPage]
    query_scope: JSON
    match_mode: str
    match_index: str
    searched_fields: list[str]
    counts: SearchCounts
    anchor_of: dict[str, str | None] | None = None
    anchor_note: str | None = None
    canvas_matches: list[JSON] | None = None
    canvas_match_note: str | None = None
    source: SourceRecord
    refresh: RefreshInfo
    result_refs: list[str] | None = None
    rows: dict[str, JSON] | None = None
    compact_format: str | None = None


class ContextInput(Input):
    source_id: Text
    section: Text | None = None
    group_id: Text | None = None
    item_id: Text | None = None
    refresh: bool = Field(True, description="Check a live source's folder first (false: read the last index as is)")


class ContextCounts(Output):
    sections: int
    counted_sections: int
    instances: int
    unique_urls: int
    note: str


class ContextOutput(Output):
    source_id: str
    scope: JSON
    sections: list[JSON]
    counts: ContextCounts
    items: list[BookmarkRow]
    nodes: list[JSON]
    groups: list[JSON]
    edges: list[JSON]
    related_nodes: list[JSON]
    memberships: list[JSON]
    source: SourceRecord
    refresh: RefreshInfo


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


def _year_range(to_year: int | None, info: ValidationInfo) -> int | None:
    start = info.data.get("from_year")
    if to_year is not None and start is not None and to_year < start:
        raise ValueError(f"{to_year} is before from_year {start}")
    return to_year


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
