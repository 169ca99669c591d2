"""Strict JSON decoding for package files.

Rejects what ``json.loads`` silently accepts and a Bookmark Canvas export never contains:
duplicate object keys, ``NaN``/``Infinity`` and non-object top levels. Errors name the file,
and for syntax errors the line and column.
"""

from __future__ import annotations

import json
from typing import Any

from bookmark_research.errors import InvalidInputError


class _DuplicateKey(ValueError):
    pass


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} is not valid JSON")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_hook, parse_constant=_reject_constant)


def load_object(data: bytes, path: str) -> dict[str, Any]:
    """Decode ``data`` (UTF-8, optional BOM) into a JSON object or raise a one-line error naming ``path``."""
    value = load_value(data, path)
    if not isinstance(value, dict):
        raise InvalidInputError(f"{path}: top level must be a JSON object")
    return value


def load_value(data: bytes, path: str) -> Any:
    """Decode ``data`` (UTF-8, optional BOM) into any JSON value, as strictly as :func:`load_object`."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except _DuplicateKey as exc:
        raise InvalidInputError(f"{path}: duplicate JSON key {str(exc)!r}") from None
    except ValueError as exc:
        raise InvalidInputError(f"{path}: {exc}") from None
    except RecursionError:
        raise InvalidInputError(f"{path}: JSON nesting is too deep") from None
    return value


#: Compact, key-order-preserving JSON used for stored ``raw_json`` columns (one encoder, reused).
dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
