"""The operation registry: the single place front ends learn what the core can do."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from bookmark_research.canvas.validation import field_path
from bookmark_research.core.app import App
from bookmark_research.errors import InvalidArgumentError


@dataclass(frozen=True)
class Operation:
    name: str  # tool name (MCP) and registry key
    cli: str  # CLI command path, e.g. "search" or "source remove"
    summary: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    func: Callable[[App, Any], dict[str, Any]]
    read_only: bool = True  # changes nothing (a query that may re-sync a live source is not read-only)
    mcp: bool = True  # also offered as an MCP tool (false: terminal-only, e.g. setting credentials)
    failure: Callable[[dict[str, Any]], str | None] | None = None  # a complete result that still means failure
    open_world: bool = False  # reaches the internet (web, scholarly or model providers)
    destructive: bool | None = None  # may delete or overwrite data; default: not read_only
    idempotent: bool | None = None  # repeating the same call changes nothing more; default: read_only

    @property
    def annotations(self) -> dict[str, bool]:
        """The MCP tool annotations (hints), derived here so every front end agrees."""
        return {"read_only_hint": self.read_only,
                "destructive_hint": (not self.read_only) if self.destructive is None else self.destructive,
                "idempotent_hint": self.read_only if self.idempotent is None else self.idempotent,
                "open_world_hint": self.open_world}


OPERATIONS: dict[str, Operation] = {}

#: The module that defines each operation, by stage. A front end imports only the module of the
#: operation it runs, so one CLI call does not build every stage's models. ``tests/test_registry.py``
#: checks this table against what the modules register.
MODULES: dict[str, tuple[str, ...]] = {
    "bookmark_research.core.operations": (
        "sync_package", "index_status", "source_history", "source_restore", "source_remove", "source_merge",
        "doctor", "search_archive", "fetch_web", "search_web", "search_providers", "literature_search", "search_plan",
        "get_settings", "update_settings", "set_setting",
    ),
    "bookmark_research.core.query_ops": ("search_bookmarks", "get_context"),
    "bookmark_research.core.research_ops": (
        "research_start", "research_status", "research_inventory", "research_search", "research_fetch",
        "research_source", "research_import_evidence", "research_record", "research_coverage", "research_finish",
        "research_report", "research_route",
    ),
    "bookmark_research.core.evaluation_ops": (
        "evaluate_research", "evaluation_write_report", "evaluation_run_from_session", "evaluation_save_run_from_session",
    ),
}


def operation(name: str, cli: str, input_model: type[BaseModel], output_model: type[BaseModel], *,
              read_only: bool = True, mcp: bool = True, failure: Callable[[dict[str, Any]], str | None] | None = None,
              open_world: bool = False, destructive: bool | None = None, idempotent: bool | None = None,
              ) -> Callable[[Callable[[App, Any], dict[str, Any]]], Callable[[App, Any], dict[str, Any]]]:
    """Register an operation. ``open_world``: it calls out to the internet; ``destructive`` /
    ``idempotent`` refine the defaults derived from ``read_only`` (see :attr:`Operation.annotations`)."""
    def register(func: Callable[[App, Any], dict[str, Any]]) -> Callable[[App, Any], dict[str, Any]]:
        summary = (func.__doc__ or "").strip().splitlines()[0]
        OPERATIONS[name] = Operation(name, cli, summary, input_model, output_model, func, read_only, mcp, failure,
                                     open_world, destructive, idempotent)
        return func

    return register


def get(name: str) -> Operation:
    """The registered operation ``name``, importing only the module that defines it."""
    if name not in OPERATIONS:
        module = next((mod for mod, names in MODULES.items() if name in names), None)
        if module is None:
            raise KeyError(name)
        importlib.import_module(module)
    return OPERATIONS[name]


def parse_input(name: str, arguments: dict[str, Any]) -> BaseModel:
    """Validate arguments for operation ``name``; a one-line error names the field."""
    op = get(name)
    try:
        return op.input_model.model_validate(arguments)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = field_path(tuple(first["loc"])) if first["loc"] else "arguments"
        raise InvalidArgumentError(f"{name}: {where}: {first['msg']}") from None


def run(app: App, name: str, arguments: dict[str, Any]) -> BaseModel:
    """Validate, execute and shape the output of one operation."""
    op = get(name)
    params = parse_input(name, arguments)
    return op.output_model.model_validate(op.func(app, params))


def all_operations() -> dict[str, Operation]:
    """Every operation, in the order of :data:`MODULES` (the MCP server's tool list)."""
    for module in MODULES:
        importlib.import_module(module)
    return {name: OPERATIONS[name] for names in MODULES.values() for name in names}
