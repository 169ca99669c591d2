"""Base classes and field types of every operation's models, and the outputs several stages share.

Input models are strict and closed (``extra="forbid"``): the MCP server derives its tool schemas
from them and the CLI validates through them, so both front ends accept exactly the same requests.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationInfo

Text = Annotated[str, StringConstraints(min_length=1, max_length=512, pattern=r"^[^\x00]*\S[^\x00]*$")]
Target = Annotated[str, StringConstraints(min_length=1, max_length=2048, pattern=r"^[^\x00]*\S[^\x00]*$")]
Path_ = Annotated[str, StringConstraints(min_length=1, max_length=4096, pattern=r"^[^\x00]+$")]
JSON = dict[str, Any]


def year_range(to_year: int | None, info: ValidationInfo) -> int | None:
    """A ``to_year`` field validator: not before ``from_year`` (literature and scholarly research searches)."""
    start = info.data.get("from_year")
    if to_year is not None and start is not None and to_year < start:
        raise ValueError(f"{to_year} is before from_year {start}")
    return to_year


class Input(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class Output(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first use: keeps CLI start-up short


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
