"""Strict JSON decoding for package files.

Rejects what ``json.loads`` silently accepts and a Bookmark Canvas export never contains:
duplicate object keys, ``NaN``/``Infinity`` and non-object top levels. Errors name the file,
and for syntax errors the line and column.
"""

from __future__ import annotations

import json
import sys
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

#: The deepest nesting decoded (objects and arrays). A folder tree 480 levels deep needs about 965.
MAX_DEPTH = 1000


def _ensure_headroom() -> None:
    """Let the decoder (which recurses once per level) reach MAX_DEPTH from wherever it is called;
    the interpreter's recursion limit is only ever raised, never lowered."""
    frame, depth = sys._getframe(), 0
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    need = depth + MAX_DEPTH + 100
    if sys.getrecursionlimit() < need:
        sys.setrecursionlimit(need)


def _syntax(exc: json.JSONDecodeError, text: str) -> str:
    """A complete sentence for a JSON syntax error (Python's own messages can end in "starting at")."""
    if not text.strip():
        return "the file is empty (a JSON object was expected)"
    where = f"invalid JSON at line {exc.lineno}, column {exc.colno}"
    if exc.msg.startswith("Unterminated string"):
        return f"{where}: a string starts there and never ends (is the file cut off?)"
    if exc.pos >= len(text.rstrip()):
        return f"{where}: the file ends before the JSON is complete (is it cut off?)"
    return f"{where}: {exc.msg[:1].lower()}{exc.msg[1:]}"


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
    _ensure_headroom()
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path}: {_syntax(exc, text)}") from None
    except _DuplicateKey as exc:
        raise InvalidInputError(f"{path}: duplicate JSON key {str(exc)!r}") from None
    except ValueError as exc:
        raise InvalidInputError(f"{path}: {exc}") from None
    except RecursionError:
        raise InvalidInputError(f"{path}: JSON nested more than {MAX_DEPTH} levels deep (the nesting limit)") from None
    return value


#: Compact, key-order-preserving JSON used for stored ``raw_json`` columns (one encoder, reused).
dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
