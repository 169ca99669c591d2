"""The shape of a wiki page as an author submits it, validated before anything is read or written.

A page is ``{title, kind, sections, links, review}``: every section cites 1–12 research claims
``{research_id, claim_id}``, links name other existing pages, and ``review`` records who declared the
content reviewed. Every text field is trimmed and may not hold NUL; titles, headings and reviewer names
are single lines. The models are closed (an unknown key is refused) and strict (no type coercion).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

PAGE_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,79}$")
RESEARCH_ID_RE = re.compile(r"^r-[a-f0-9]{16}$")
CLAIM_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")

MAX_SECTIONS = 16
MAX_SECTION_CLAIMS = 12
MAX_PAGE_CLAIMS = 24
MAX_LINKS = 32
MAX_TEXT = 12_000
MAX_NOTE = 4_000
MAX_LINE = 300
MAX_REVISION = 10_000

PageId = Annotated[str, StringConstraints(pattern=PAGE_ID_RE.pattern)]
ResearchId = Annotated[str, StringConstraints(pattern=RESEARCH_ID_RE.pattern)]
ClaimId = Annotated[str, StringConstraints(pattern=CLAIM_ID_RE.pattern)]
Line = Annotated[str, StringConstraints(min_length=1, max_length=MAX_LINE, pattern=r"^[^\x00\r\n]+$")]
Text = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT, pattern=r"^[^\x00]+$")]
Note = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NOTE, pattern=r"^[^\x00]+$")]
Relation = Annotated[str, StringConstraints(min_length=1, max_length=500, pattern=r"^[^\x00]+$")]
InputVersion = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00]+$")]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True, defer_build=True)


class ClaimRef(_Closed):
    research_id: ResearchId = Field(description="Research session id (r- and 16 hex digits)")
    claim_id: ClaimId = Field(description="Claim id in that session, e.g. c1")


class Section(_Closed):
    heading: Line
    text: Text = Field(description="Markdown; [[page-id]] and [label](page-id) link to other wiki pages")
    claims: list[ClaimRef] = Field(min_length=1, max_length=MAX_SECTION_CLAIMS,
                                   description="1-12 claim references supporting this section")

    @model_validator(mode="after")
    def _no_repeat(self) -> Section:
        pairs = [(c.research_id, c.claim_id) for c in self.claims]
        if len(set(pairs)) != len(pairs):
            raise ValueError("Duplicate claim reference in a section")
        return self


class Link(_Closed):
    page_id: PageId
    relation: Relation


class Review(_Closed):
    method: Literal["human", "model"]
    reviewer: Line
    note: Annotated[str, StringConstraints(max_length=MAX_NOTE, pattern=r"^[^\x00]*$")]


class Page(_Closed):
    title: Line
    kind: Literal["topic", "entity"]
    sections: list[Section] = Field(min_length=1, max_length=MAX_SECTIONS)
    links: list[Link] = Field(max_length=MAX_LINKS)
    review: Review

    @model_validator(mode="after")
    def _limits(self) -> Page:
        if len(claim_refs(self)) > MAX_PAGE_CLAIMS:
            raise ValueError(f"A page may cite at most {MAX_PAGE_CLAIMS} distinct claims")
        targets = [link.page_id for link in self.links]
        if len(set(targets)) != len(targets):
            raise ValueError("Duplicate Wiki link")
        return self


def claim_refs(page: Page) -> dict[tuple[str, str], str]:
    """Distinct ``(research_id, claim_id)`` pairs in order of first appearance, each with where it first
    appears (``page.sections[1].claims[0]``), for errors that name the field."""
    seen: dict[tuple[str, str], str] = {}
    for i, section in enumerate(page.sections):
        for j, ref in enumerate(section.claims):
            seen.setdefault((ref.research_id, ref.claim_id), f"page.sections[{i}].claims[{j}]")
    return seen


def page_dict(page: Page) -> dict:
    """The page as stored in a revision record (trimmed values, fixed key order)."""
    return page.model_dump(mode="json")
