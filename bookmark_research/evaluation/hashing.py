"""Canonical JSON and its SHA-256: how the evaluation identifies its inputs and conditions."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no insignificant whitespace, UTF-8 kept as is, NaN refused."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def canonical_sha256(value: Any) -> str:
    """Hex SHA-256 of :func:`canonical_json` of ``value``."""
    return hashlib.sha256(canonical_json(value)).hexdigest()
