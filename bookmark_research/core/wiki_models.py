"""Input and output models of the wiki operations (``core/wiki_ops.py``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from bookmark_research.core.models import JSON, Input, Output
from bookmark_research.wiki.pages import MAX_REVISION, InputVersion, Note, Page, PageId

Query = Annotated[str, StringConstraints(min_length=1, max_length=500, pattern=r"^[^\x00]*\S[^\x00]*$")]


class WikiWriteInput(Input):
    page_id: PageId = Field(description="Lower-case letters, digits and hyphens, 1-80 characters")
    page: Page = Field(description="{title, kind: topic|entity, sections[{heading, text, claims}], links, review}")
    change_note: Note = Field(description="What changed in this revision")
    expected_revision: int = Field(0, ge=0, le=MAX_REVISION,
                                   description="The page's current revision (0 for a new page); optimistic concurrency")
    reviewed_input_version: InputVersion | None = Field(
        None, description="Acknowledge a cited session's changed bookmark input (its current input version)")


class WikiAckInput(Input):
    page_id: PageId
    note: Note = Field(description="What was reviewed; becomes the page's review note")
    expected_revision: int | None = Field(None, ge=1, le=MAX_REVISION, description="Default: the current revision")


class WikiGetInput(Input):
    page_id: PageId
    revision: int | None = Field(None, ge=1, le=MAX_REVISION + 1, description="Default: the current revision")


class WikiOpenInput(Input):
    page_id: PageId


class WikiListInput(Input):
    offset: int = Field(0, ge=0, le=10_000_000)
    limit: int = Field(20, ge=1, le=100)


class WikiSearchInput(Input):
    query: Query
    offset: int = Field(0, ge=0, le=10_000_000)
    limit: int = Field(10, ge=1, le=100)


class WikiLintInput(Input):
    page_id: PageId | None = Field(None, description="Lint one page (default: the whole wiki)")


class WikiPageRow(Output):
    """A page's pointer in ``index.json`` (its current revision)."""

    page_id: str
    revision: int
    record_file: str
    sha256: str
    markdown_file: str
    markdown_sha256: str
    view_sha256: str
    title: str
    kind: str
    updated_at: str
    claims: int
    summary: str


class WikiWriteOutput(WikiPageRow):
    status: str
    directory: str
    artifacts: dict[str, str]
    semantic_review: str
    acknowledged: list[JSON]
    catalog: dict[str, str]
    derived_errors: list[str]


class Unacknowledged(Output):
    research_id: str
    reason: str


class WikiAckOutput(WikiWriteOutput):
    acknowledged_note: str
    unacknowledged: list[Unacknowledged] = Field(
        description="Cited sessions the acknowledgement could not cover (their input cannot be checked)")


class Validation(Output):
    status: str
    issues: list[JSON]
    semantic_review: str


class WikiGetOutput(Output):
    schema_version: int
    page_id: str
    revision: int
    updated_at: str
    change_note: str
    previous: JSON | None
    page: JSON
    evidence: list[JSON]
    acknowledged: list[JSON]
    resolved_links: list[JSON]
    review_rubric: str
    artifacts: dict[str, str]
    validation: Validation


class WikiListOutput(Output):
    directory: str
    pages: list[WikiPageRow]
    total: int
    next_offset: int | None


class WikiHit(Output):
    page_id: str
    revision: int
    title: str
    kind: str
    score: float
    snippet: str | None
    updated_at: str
    validation: Validation
    whitespace_insensitive: bool
    artifacts: dict[str, str]


class WikiSearchOutput(Output):
    query: str
    directory: str
    results: list[WikiHit]
    total: int
    next_offset: int | None
    excluded_stale_pages: int
    excluded_page_ids: list[str]
    method: str


class WikiLintOutput(Output):
    status: str
    directory: str
    pages_checked: int
    issues: list[JSON]
    semantic_support: str
    boundary: str


class WikiOpenOutput(Output):
    """Where a page's current Markdown view is (checked to exist)."""

    page_id: str
    revision: int
    view_file: str
