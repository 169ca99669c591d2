"""Protocol folder names (English and Chinese) and vault-relative reference resolution."""

from __future__ import annotations

from typing import Literal

from bookmark_research.errors import InvalidInputError, UnsafeInputError

SectionFolder = Literal["permanent", "temporary"]

#: Top-level protocol folders, both export languages plus the importer's aliases.
PERMANENT_FOLDERS = frozenset({"Permanent", "永久栏目"})
TEMPORARY_FOLDERS = frozenset({"Temporary", "Temporary Sections", "临时栏目"})
PROTOCOL_FOLDERS = PERMANENT_FOLDERS | TEMPORARY_FOLDERS

#: Names used when a single card must be given a path inside a package.
CANONICAL_FOLDER = {
    "en": {"permanent": "Permanent", "temporary": "Temporary"},
    "zh": {"permanent": "永久栏目", "temporary": "临时栏目"},
}


def folder_kind(segment: str) -> SectionFolder | None:
    if segment in PERMANENT_FOLDERS:
        return "permanent"
    if segment in TEMPORARY_FOLDERS:
        return "temporary"
    return None


def protocol_kind(rel_path: str) -> SectionFolder | None:
    """Kind of a package-relative path whose first segment is a protocol folder."""
    return folder_kind(rel_path.split("/", 1)[0])


def path_language(rel_path: str) -> str:
    return "zh" if rel_path.split("/", 1)[0] in {"永久栏目", "临时栏目"} else "en"


def check_reference(reference: object, field: str) -> list[str]:
    """Validate a vault-relative reference and return its segments."""
    if not isinstance(reference, str) or not reference.strip():
        raise InvalidInputError(f"{field}: must be a non-empty path string")
    if "\x00" in reference or "\\" in reference or reference.startswith("/"):
        raise UnsafeInputError(f"{field}: unsafe vault reference {reference!r}")
    segments = reference.split("/")
    if any(seg in ("", ".", "..") for seg in segments):
        raise UnsafeInputError(f"{field}: unsafe vault reference {reference!r}")
    if ":" in segments[0]:
        raise UnsafeInputError(f"{field}: absolute or URI reference {reference!r} is not a package file")
    return segments


def reference_candidates(reference: str, field: str) -> list[str]:
    """Package-relative paths a vault reference may name, most specific prefix stripped first.

    Any vault prefix (none, the export root, a vault subfolder plus root) is dropped by cutting
    at a protocol folder segment. When the prefix itself contains a protocol folder name, every
    cut is a candidate and the caller picks the one that exists in the package, preferring the
    shortest suffix.
    """
    segments = check_reference(reference, field)
    cuts = [i for i, seg in enumerate(segments[:-1]) if seg in PROTOCOL_FOLDERS]
    return ["/".join(segments[i:]) for i in reversed(cuts)]


def is_section_reference(reference: str, field: str) -> bool:
    """Whether a canvas ``file`` reference names a section JSON (not media or notes)."""
    return bool(reference_candidates(reference, field)) and reference.lower().endswith(".json")


def resolve_reference(reference: str, field: str, known_paths: set[str] | dict[str, object]) -> str | None:
    """Resolve a section reference to a package path; ``None`` if no candidate is present."""
    candidates = reference_candidates(reference, field)
    for candidate in candidates:
        if candidate in known_paths:
            return candidate
    return None
