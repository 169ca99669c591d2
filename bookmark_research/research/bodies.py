"""Saved source texts: read inside the session folder and verified against their SHA-256.

A file is re-read and re-hashed whenever its size, inode, modification or change time differ from when
this process last hashed it (the change time cannot be set back by ordinary means, so an edited body is
always noticed); an unchanged file is served from memory together with its quote index.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from bookmark_research.errors import BookmarkResearchError, ConflictError
from bookmark_research.research.quotes import BodyIndex, body_index
from bookmark_research.research.store import Session, read_regular

NO_TEXT = "Source has no extracted page text; it cannot support a quoted claim"
HASH_CHANGED = "Saved source hash changed; fetch a new snapshot before citing it"
_HASHED: dict[tuple[str, int, int, int, int], str] = {}


class EvidenceError(ConflictError):
    """A source whose saved text cannot be used as evidence (missing, unextracted, edited)."""

    kind = "evidence"


def has_text(source: dict[str, Any]) -> bool:
    return bool(source.get("body_file")) and source.get("extraction_status") == "extracted" and bool(source.get("sha256"))


def load(session: Session, source: dict[str, Any], require_extracted: bool = True) -> BodyIndex:
    """The verified saved text of ``source`` (raises :class:`EvidenceError` with the reference's wording).

    Only extracted page text can support a claim; ``require_extracted=False`` also reads what was saved of
    a login wall or an error page (for reading, never for citing).
    """
    if (require_extracted and not has_text(source)) or not source.get("body_file") or not source.get("sha256"):
        raise EvidenceError(NO_TEXT)
    try:
        path = session.path(source["body_file"])
    except BookmarkResearchError as exc:
        raise EvidenceError(exc.message) from None
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        raise EvidenceError(f"{HASH_CHANGED} (saved text of {source['id']} is missing)") from None
    key = (str(path), st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    expected = source["sha256"]
    if _HASHED.get(key) == expected:
        cached = body_index(expected)
        if cached is not None:
            return cached
    try:
        data = read_regular(path, "saved source text")
    except BookmarkResearchError:
        raise EvidenceError(f"{HASH_CHANGED} (saved text of {source['id']} cannot be read)") from None
    if hashlib.sha256(data).hexdigest() != expected:
        raise EvidenceError(f"{HASH_CHANGED} ({source['id']})")
    if len(_HASHED) > 10_000:
        _HASHED.clear()
    _HASHED[key] = expected
    found = body_index(expected, data.decode("utf-8"))
    assert found is not None
    return found


def problem(session: Session, source: dict[str, Any]) -> str | None:
    """Why ``source``'s text cannot be used now, or ``None``."""
    try:
        load(session, source)
    except EvidenceError as exc:
        return exc.message
    return None
