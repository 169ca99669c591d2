"""The operation registry: the single place front ends learn what the core can do."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from bookmark_research.canvas.validation import field_path
from bookmark_research.core.app import App
from bookmark_research.errors import InvalidInputError


@dataclass(frozen=True)
class Operation:
    name: str  # tool name (MCP) and registry key
    cli: str  # CLI command path, e.g. "search" or "source remove"
    summary: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    func: Callable[[App, Any], dict[str, Any]]
    read_only: bool = True
    mcp: bool = True  # also offered as an MCP tool (false: terminal-only, e.g. setting credentials)
    failure: Callable[[dict[str, Any]], str | None] | None = None  # a complete result that still means failure


OPERATIONS: dict[str, Operation] = {}


def operation(name: str, cli: str, input_model: type[BaseModel], output_model: type[BaseModel], *,
              read_only: bool = True, mcp: bool = True, failure: Callable[[dict[str, Any]], str | None] | None = None,
              ) -> Callable[[Callable[[App, Any], dict[str, Any]]], Callable[[App, Any], dict[str, Any]]]:
    def register(func: Callable[[App, Any], dict[str, Any]]) -> Callable[[App, Any], dict[str, Any]]:
        summary = (func.__doc__ or "").strip().splitlines()[0]
        OPERATIONS[name] = Operation(name, cli, summary, input_model, output_model, func, read_only, mcp, failure)
        return func

    return register


def parse_input(name: str, arguments: dict[str, Any]) -> BaseModel:
    """Validate arguments for operation ``name``; a one-line error names the field."""
    op = OPERATIONS[name]
    try:
        return op.input_model.model_validate(arguments)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = field_path(tuple(first["loc"])) if first["loc"] else "arguments"
        raise InvalidInputError(f"{name}: {where}: {first['msg']}") from None


def run(app: App, name: str, arguments: dict[str, Any]) -> BaseModel:
    """Validate, execute and shape the output of one operation."""
    import bookmark_research.core.operations  # noqa: F401  (registers the operations)

    op = OPERATIONS[name]
    params = parse_input(name, arguments)
    return op.output_model.model_validate(op.func(app, params))


def all_operations() -> dict[str, Operation]:
    import bookmark_research.core.operations  # noqa: F401

    return OPERATIONS
