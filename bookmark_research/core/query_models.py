"""Models of the query operations: bookmark search and canvas context."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from bookmark_research.canvas.colors import TAG_COLORS
from bookmark_research.core.base_models import JSON, Input, Output, RefreshInfo, SourceRecord, Target, Text


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
