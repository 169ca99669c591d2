"""The JSON layout of a session's large files (state, inventory, context, sources, coverage).

One line per top-level field, and one line per element of a top-level list: still readable, greppable and
diff-friendly, and written by the C JSON encoder (an indented dump goes through the pure-Python encoder,
several times slower on a 10,000-entry inventory that is rewritten on every step). UTF-8 kept, no NaN,
trailing newline — otherwise the same conventions as ``atomic.dump_json``.
"""

from __future__ import annotations

import json
from typing import Any

_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


def dumps(document: dict[str, Any]) -> str:
    lines = ["{"]
    last = len(document) - 1
    for i, (key, value) in enumerate(document.items()):
        end = "," if i < last else ""
        if isinstance(value, list) and value:
            lines.append(f"  {_encode(key)}: [")
            final = len(value) - 1
            lines.extend(f"    {_encode(item)}{',' if j < final else ''}" for j, item in enumerate(value))
            lines.append(f"  ]{end}")
        else:
            lines.append(f"  {_encode(key)}: {_encode(value)}{end}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} is not valid JSON")


_decoder = json.JSONDecoder(parse_constant=_no_constant)


def loads(data: bytes, path: str) -> dict[str, Any]:
    """A session file written by :func:`dumps`, decoded by the C decoder (NaN refused; one-line errors).

    User-supplied JSON goes through ``canvas.strictjson`` instead, which also refuses duplicate keys.
    """
    from bookmark_research.errors import InvalidInputError

    try:
        value = _decoder.decode(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise InvalidInputError(f"{path}: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidInputError(f"{path}: top level must be a JSON object")
    return value
