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
    #: changes nothing (a query that may re-sync a live source is not read-only); a terminal-only field may still
    #: write a file the terminal asked for (``evaluate --output``): the MCP tool, which refuses it, writes nothing
    read_only: bool = True
    mcp: bool = True  # also offered as an MCP tool (false: terminal-only, e.g. setting credentials)
    failure: Callable[[dict[str, Any]], str | None] | None = None  # a complete result that still means failure
    open_world: bool = False  # reaches the internet (web, scholarly or model providers)
    destructive: bool | None = None  # may delete or overwrite data; default: not read_only
    idempotent: bool | None = None  # repeating the same call changes nothing more; default: read_only
    #: Input fields only a terminal may set (e.g. a folder to write into, like the ``output.directory`` setting):
    #: the MCP server leaves them out of the published schema and refuses a call that passes one.
    terminal_only_fields: tuple[str, ...] = ()
    terminal_only_alternative: str | None = None  # what else chooses them, e.g. "the output.directory setting"

    def terminal_only_refusal(self, field: str) -> str:
        """The one-line refusal of ``field`` outside a terminal (names the CLI option that sets it)."""
        message = (f"{field} can only be chosen from a terminal: use `bookmark-research {self.cli} "
                   f"--{field.replace('_', '-')}`")
        return message + (f" or {self.terminal_only_alternative}" if self.terminal_only_alternative else "")

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
        "evaluate_research", "evaluation_run_from_session",
    ),
    "bookmark_research.core.wiki_ops": (
        "wiki_write", "wiki_acknowledge", "wiki_get", "wiki_open", "wiki_list", "wiki_search", "wiki_lint",
    ),
}


def operation(name: str, cli: str, input_model: type[BaseModel], output_model: type[BaseModel], *,
              read_only: bool = True, mcp: bool = True, failure: Callable[[dict[str, Any]], str | None] | None = None,
              open_world: bool = False, destructive: bool | None = None, idempotent: bool | None = None,
              terminal_only_fields: tuple[str, ...] = (), terminal_only_alternative: str | None = None,
              ) -> Callable[[Callable[[App, Any], dict[str, Any]]], Callable[[App, Any], dict[str, Any]]]:
    """Register an operation. ``open_world``: it calls out to the internet; ``destructive`` /
    ``idempotent`` refine the defaults derived from ``read_only`` (see :attr:`Operation.annotations`);
    ``terminal_only_fields`` are input fields the MCP server neither publishes nor accepts (see
    :meth:`Operation.terminal_only_refusal`)."""
    def register(func: Callable[[App, Any], dict[str, Any]]) -> Callable[[App, Any], dict[str, Any]]:
        summary = (func.__doc__ or "").strip().splitlines()[0]
        unknown = [f for f in terminal_only_fields if f not in input_model.model_fields]
        if unknown:
            raise ValueError(f"{name}: terminal_only_fields not in the input model: {', '.join(unknown)}")
        OPERATIONS[name] = Operation(name, cli, summary, input_model, output_model, func, read_only, mcp, failure,
                                     open_world, destructive, idempotent, tuple(terminal_only_fields),
                                     terminal_only_alternative)
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


def _not_unicode(value: Any, loc: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    """Where ``value`` holds a string that is not valid Unicode (a lone surrogate: JSON allows the escape,
    but no file can store it), or ``None``. Free-form JSON arguments would otherwise fail only when saved."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return loc
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _not_unicode(key, loc) if isinstance(key, str) else None
            found = found if found is not None else _not_unicode(item, (*loc, key))
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _not_unicode(item, (*loc, index))
            if found is not None:
                return found
    return None


def parse_input(name: str, arguments: dict[str, Any]) -> BaseModel:
    """Validate arguments for operation ``name``; a one-line error names the field."""
    op = get(name)
    bad = _not_unicode(arguments)
    if bad is not None:
        raise InvalidArgumentError(f"{name}: {field_path(bad) if bad else 'arguments'}: text is not valid Unicode "
                                   "(a lone surrogate such as \\ud800); nothing was changed", bad)
    try:
        return op.input_model.model_validate(arguments)
    except ValidationError as exc:
        where, message = plain_error(exc)
        raise InvalidArgumentError(f"{name}: {where}: {message}", tuple(exc.errors()[0]["loc"])) from None


def plain_error(exc: ValidationError) -> tuple[str, str]:
    """(field path, message) of a validation error, in the user's terms rather than pydantic's: no union
    member tags in the path (``providers[0]``, not ``providers[0].literal['exa',…]``), the allowed values
    of every union member together, and "must not be blank" for the not-blank text patterns."""
    errors = exc.errors()

    def loc(error: Any) -> tuple[Any, ...]:
        return tuple(p for p in error["loc"] if not (isinstance(p, str) and ("[" in p or "(" in p)))

    first = errors[0]
    where = field_path(loc(first)) if loc(first) else "arguments"
    message = first["msg"]
    if first["type"] == "literal_error":
        allowed = [e["ctx"]["expected"] for e in errors if e["type"] == "literal_error" and loc(e) == loc(first)]
        if len(allowed) > 1:
            values = ", ".join(a.replace(" or ", ", ") for a in allowed)
            head, _, last = values.rpartition(", ")
            message = f"Input should be {head} or {last}"
    elif first["type"] == "string_pattern_mismatch" and "\\S" in str((first.get("ctx") or {}).get("pattern", "")):
        message = "must not be blank" + (" or hold a NUL character" if "x00" in first["ctx"]["pattern"] else "")
    return where, message


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
