"""Pydantic models of Bookmark Canvas section JSON and the JSON Canvas entry.

Every model keeps unknown fields (``extra="allow"``) so nothing a newer exporter writes is lost.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from bookmark_research.canvas.colors import DEFAULT_NOTE_COLOR, TAG_COLORS  # noqa: F401  (re-exported)

NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Tag(_Open):
    color: NonEmptyStr
    text: str = ""


class Annotated_(_Open):
    """Fields shared by anything that can carry tags and a note."""

    tags: list[Tag] | None = None
    note: str | None = None
    noteColor: str | None = None


class IdentityEntry(Annotated_):
    syncId: NonEmptyStr


class PermanentNode(_Open):
    id: NonEmptyStr
    parentId: str | None = None
    title: str = ""
    url: str = ""
    children: list[PermanentNode] | None = None


class TemporaryItem(Annotated_):
    id: NonEmptyStr
    sectionId: str | None = None
    type: Literal["folder", "bookmark"]
    title: str = ""
    url: str = ""
    children: list[TemporaryItem] | None = None


class SectionHeader(_Open):
    """The header of a section file; ``tree``/``items``/``identityMap`` are parsed separately."""

    format: Literal["bookmark-canvas-section"]
    sectionType: Literal["permanent", "temporary"]
    schemaVersion: int | None = None
    id: NonEmptyStr | None = None
    slot: str | None = None
    label: str | None = None
    title: str = ""
    descriptionMd: str = ""
    fileRole: str | None = None
    anchorOnly: bool | None = None
    copyId: str | None = None
    inheritFrom: str | None = None
    tempKind: str | None = None

    @property
    def is_anchor(self) -> bool:
        return self.fileRole == "copy-anchor" or self.anchorOnly is True


def _finite(value: float) -> float:
    if isinstance(value, bool) or not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


class CanvasNode(_Open):
    id: NonEmptyStr
    type: NonEmptyStr
    x: float
    y: float
    width: float = Field(gt=0)
    height: float = Field(gt=0)
    color: str | None = None
    file: str | None = None
    text: str | None = None
    label: str | None = None
    url: str | None = None

    @field_validator("x", "y", "width", "height", mode="before")
    @classmethod
    def _numbers(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("must be a number")
        return _finite(float(value))


class CanvasEdge(_Open):
    id: NonEmptyStr
    fromNode: NonEmptyStr
    toNode: NonEmptyStr
    fromSide: str | None = None
    toSide: str | None = None
    fromEnd: Literal["none", "arrow"] = "none"
    toEnd: Literal["none", "arrow"] = "arrow"
    label: str | None = None
    color: str | None = None


class CanvasDocument(_Open):
    nodes: list[CanvasNode] = Field(default_factory=list)
    edges: list[CanvasEdge] = Field(default_factory=list)


PermanentNode.model_rebuild()
TemporaryItem.model_rebuild()
