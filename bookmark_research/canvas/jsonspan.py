"""Decode a section file and fingerprint the text of one top-level value on the way.

A re-sync of a browser tree whose tree text is unchanged (only identity-map notes or tags were
edited) need not walk the tree: comparing a digest of the tree's text with the one stored at the last
sync tells. The digest costs a hash of that text, not a second decode or an encode of the tree.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from bookmark_research.canvas.strictjson import _DECODER, _pairs_hook, load_object

_WS = re.compile(r"[ \t\n\r]*")
_CHUNK = 1 << 20


def _top_level(text: str, key: str) -> tuple[dict[str, Any], tuple[int, int] | None]:
    """The top-level object, decoded member by member with the strict decoder's scanner, and the span of
    ``key``'s value. Raises on anything unusual; the caller then decodes with :func:`load_object`."""
    match, scan = _WS.match, _DECODER.scan_once
    idx = match(text, 0).end()
    if text[idx:idx + 1] != "{":
        raise ValueError("not an object")
    pairs: list[tuple[str, Any]] = []
    span = None
    idx = match(text, idx + 1).end()
    if text[idx:idx + 1] == "}":
        idx += 1
    else:
        while True:
            if text[idx:idx + 1] != '"':
                raise ValueError("expected a key")
            name, idx = json.decoder.scanstring(text, idx + 1, True)
            idx = match(text, idx).end()
            if text[idx:idx + 1] != ":":
                raise ValueError("expected ':'")
            start = match(text, idx + 1).end()
            value, idx = scan(text, start)
            if name == key:
                span = (start, idx)
            pairs.append((name, value))
            idx = match(text, idx).end()
            separator, idx = text[idx:idx + 1], idx + 1
            if separator == "}":
                break
            if separator != ",":
                raise ValueError("expected ',' or '}'")
            idx = match(text, idx).end()
    if match(text, idx).end() != len(text):
        raise ValueError("extra data")
    return _pairs_hook(pairs), span


def load_with_digest(data: bytes, path: str, key: str) -> tuple[dict[str, Any], str | None]:
    """:func:`load_object` of ``data``, plus a digest of the exact text of the top-level ``key`` value
    (``None`` when absent). Whatever the fast route cannot decode is decoded (or refused, with its
    one-line error) by :func:`load_object` itself."""
    try:
        text = data.decode("utf-8-sig")
        value, span = _top_level(text, key)
    except (ValueError, RecursionError, StopIteration):  # JSONDecodeError and duplicate keys are ValueErrors
        return load_object(data, path), None
    if span is None:
        return value, None
    digest = hashlib.blake2b(digest_size=16)
    for start in range(span[0], span[1], _CHUNK):  # in slices: no second copy of a large tree's text
        digest.update(text[start:min(start + _CHUNK, span[1])].encode("utf-8", "surrogatepass"))
    return value, digest.hexdigest()
