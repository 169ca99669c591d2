"""Size and count limits applied to every package input."""

from __future__ import annotations

import os
from dataclasses import dataclass

MiB = 1024 * 1024


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        parsed = int(value)
    except ValueError:
        parsed = 0
    if parsed <= 0:
        from bookmark_research.errors import InvalidInputError

        raise InvalidInputError(f"environment variable {name} must be a positive integer, got {value!r}")
    return parsed


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 64 * MiB
    max_total_bytes: int = 256 * MiB
    max_entries: int = 10_000

    @classmethod
    def from_env(cls) -> Limits:
        """Defaults, overridden by ``BOOKMARK_RESEARCH_MAX_FILE_BYTES``, ``…_MAX_PACKAGE_BYTES``, ``…_MAX_ENTRIES``."""
        return cls(
            max_file_bytes=_env_int("BOOKMARK_RESEARCH_MAX_FILE_BYTES", cls.max_file_bytes),
            max_total_bytes=_env_int("BOOKMARK_RESEARCH_MAX_PACKAGE_BYTES", cls.max_total_bytes),
            max_entries=_env_int("BOOKMARK_RESEARCH_MAX_ENTRIES", cls.max_entries),
        )
