"""Identifiers and digests of research sessions.

- session: ``r-`` + 16 lowercase hex (random);
- inventory entry: ``u-`` + the first 32 hex of SHA-256 of the exact original URL (UTF-8);
- bookmark instance: ``b-`` + 32 hex of SHA-256 of the JSON text ``[position, "url"]`` (URL lists) or
  ``["source_id", "section_id", "item_id"]`` (indexed bookmarks), default separators, non-ASCII kept;
- caller-chosen ids (questions, operations, batches): ``[A-Za-z0-9][A-Za-z0-9_.-]*``, at most 80 characters,
  so ``../escape`` is refused before anything happens;
- claims ``c<N>``, sources ``s<N>``, conflicts ``x<N>``: numbered in order of creation.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from typing import Any

from bookmark_research.errors import InvalidInputError

RESEARCH_ID = re.compile(r"r-[0-9a-f]{16}")
IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
IDENTIFIER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
MAX_IDENTIFIER = 80


def new_research_id() -> str:
    return "r-" + uuid.uuid4().hex[:16]


def check_research_id(value: object) -> str:
    if not isinstance(value, str) or not RESEARCH_ID.fullmatch(value):
        shown = repr(value)[:60]
        raise InvalidInputError(f"Invalid research_id {shown}: expected r- and 16 lowercase hex characters")
    return value


def is_identifier(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_IDENTIFIER and IDENTIFIER.fullmatch(value) is not None


def check_identifier(value: object, field: str) -> str:
    if not is_identifier(value):
        raise InvalidInputError(f"{field}: {repr(value)[:60]} is not an identifier "
                                f"([A-Za-z0-9][A-Za-z0-9_.-]*, at most {MAX_IDENTIFIER} characters)")
    return value  # type: ignore[return-value]


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def inventory_id(url: str) -> str:
    return "u-" + sha256_text(url)[:32]


def url_instance_id(position: int, url: str) -> str:
    return "b-" + sha256_text(json.dumps([position, url], ensure_ascii=False))[:32]


def bookmark_instance_id(source_id: str, section_id: str, item_id: str) -> str:
    return "b-" + sha256_text(json.dumps([source_id, section_id, item_id], ensure_ascii=False))[:32]


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept: the text that digests are computed over."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def digest(value: Any) -> str:
    return sha256_text(canonical_json(value))


def operation_file_stem(operation_id: str) -> str:
    """Receipt file name (without ``.json``) of an operation: 24 hex of SHA-256 of its id."""
    return sha256_text(operation_id)[:24]


def next_number(records: list[dict[str, Any]], prefix: str) -> str:
    """``<prefix><N>`` with N one more than the number of existing records (ids are never reused)."""
    return f"{prefix}{len(records) + 1}"
