"""Build the MCP server from the operation registry.

Each registered operation becomes one tool with the operation's name, its pydantic input model's
JSON schema (closed: ``additionalProperties: false``) as input schema and its output model as
output schema. Arguments are validated by that same input model before any work happens; the
result is returned as ``structuredContent`` plus the same JSON as text. Failures come back as
``isError`` with ``{"tool", "error", "error_kind"}``, never a traceback. Input fields an operation declares
``terminal_only_fields`` (e.g. the folder a session writes into) are left out of the published schema and a
call that passes one is refused.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict

from bookmark_research import __version__
from bookmark_research.core.app import App
from bookmark_research.core.registry import Operation, all_operations, run
from bookmark_research.errors import BookmarkResearchError, internal_error
from bookmark_research.sources.live import Timing
from bookmark_research.sources.watcher import SourceWatcher

logger = logging.getLogger("bookmark_research.mcp")

INSTRUCTIONS = (
    "Search and inspect the user's Bookmark Canvas exports, research what the bookmarks point to, and keep "
    "what was learned in a cited wiki. Call index_status to list sources, sync_package to import a package "
    "folder, ZIP or section JSON, search_bookmarks for ranked full-text search (each target is its own query; "
    "words in a target are ANDed) and get_context for sections, copies, groups and edges. Bookmark instances, "
    "unique URLs and folders are different counts; copy anchors are never counted twice. For research, "
    "research_start freezes an inventory of bookmarks and questions; then research_fetch / research_source / "
    "research_record (claims quote saved text verbatim) until research_coverage is complete, and "
    "research_finish. wiki_write publishes pages whose sections cite reviewed claims."
)


class _Arguments(ArgModelBase):
    """Hands the raw arguments through; the operation's strict input model validates them."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def _error(tool: str, message: str, kind: str) -> CallToolResult:
    payload = {"tool": tool, "error": message, "error_kind": kind}
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
                          is_error=True)


def _tool(op: Operation, app: App, lock: threading.Lock, after: Callable[[str], None]) -> Tool:
    def call(**arguments: Any) -> Any:
        refused = next((f for f in op.terminal_only_fields if f in arguments), None)
        if refused is not None:  # a choice the registry reserves for a terminal (e.g. where files are written)
            return _error(op.name, op.terminal_only_refusal(refused), "invalid_input")
        with lock:  # one operation at a time on the shared connection
            try:
                result = run(app, op.name, arguments)
                after(op.name)
                message = op.failure(result.model_dump(mode="json")) if op.failure is not None else None
                if message:  # a complete answer that still means failure: isError, same payload
                    payload = result.model_dump(mode="json")
                    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
                                          structured_content=payload, is_error=True)
                return result
            except BookmarkResearchError as exc:
                logger.info("tool %s failed: %s", op.name, exc.kind)
                return _error(op.name, exc.message, exc.kind)
            except Exception as exc:  # never leak a traceback or argument values
                logger.warning("tool %s failed unexpectedly: %s", op.name, type(exc).__name__)
                return _error(op.name, internal_error(exc), "internal")

    call.__name__ = op.name
    call.__doc__ = op.summary
    call.__signature__ = inspect.Signature(return_annotation=op.output_model)  # type: ignore[attr-defined]
    tool = Tool.from_function(
        call,
        name=op.name,
        description=op.summary,
        annotations=ToolAnnotations(**op.annotations),
        structured_output=True,
    )
    tool.fn_metadata.arg_model = _Arguments
    tool.parameters = _schema(op)
    return tool


def _schema(op: Operation) -> dict[str, Any]:
    """The input model's JSON schema without the fields only a terminal may set."""
    schema = op.input_model.model_json_schema()
    for field in op.terminal_only_fields:
        schema.get("properties", {}).pop(field, None)
        if field in schema.get("required", []):
            schema["required"] = [r for r in schema["required"] if r != field]
    return schema


def build_server(app: App, watch: Timing | None = None) -> MCPServer:
    """An MCP server exposing every registered operation against ``app``.

    With ``watch``, a :class:`SourceWatcher` follows the live sources for as long as the server runs
    (it starts with the server and stops with it; a sync through the server is picked up at once).
    """
    lock = threading.Lock()
    holder: dict[str, SourceWatcher] = {}

    def after(name: str) -> None:
        if name == "sync_package" and "watcher" in holder:
            holder["watcher"].request_reload()

    tools = [_tool(op, app, lock, after) for op in all_operations().values() if op.mcp]

    @contextlib.asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        if watch is not None:
            holder["watcher"] = SourceWatcher(app.data_dir, watch).start()
        try:
            yield
        finally:
            watcher = holder.pop("watcher", None)
            if watcher is not None:
                watcher.stop()

    return MCPServer(name="bookmark-research", version=__version__, instructions=INSTRUCTIONS, tools=tools,
                     log_level="WARNING", lifespan=lifespan)


def serve(data_dir: str | None = None, timing: Timing | None = None) -> None:
    """Run the stdio server, watching live sources, until the client disconnects."""
    logging.basicConfig(level=logging.WARNING, format="bookmark-research MCP: %(message)s")
    with App(data_dir) as app:
        build_server(app, watch=timing or Timing()).run("stdio")
