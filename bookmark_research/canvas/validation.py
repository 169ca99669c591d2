"""Turn pydantic validation failures into one-line errors that name the file and field."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bookmark_research.errors import InvalidInputError

M = TypeVar("M", bound=BaseModel)


def field_path(loc: tuple[Any, ...], prefix: str = "") -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def validate(model: type[M], data: Any, path: str, prefix: str = "") -> M:
    """Validate ``data`` against ``model``; raise :class:`InvalidInputError` naming ``path`` and the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = field_path(tuple(first["loc"]), prefix)
        more = len(exc.errors()) - 1
        suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise InvalidInputError(f"{path}: field {where}: {first['msg']}{suffix}") from None
