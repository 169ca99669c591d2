"""Where a session writes is a terminal-only choice (QA B1): the registry declares it, MCP refuses it."""

from __future__ import annotations

import anyio
from mcp import Client

from bookmark_research.core import registry
from bookmark_research.mcp.server import build_server
from tests.conftest import cli_json, mcp_call, mcp_payload

QUESTIONS = [{"id": "q1", "question": "x"}]
REFUSAL = ("output_directory can only be chosen from a terminal: use `bookmark-research research start "
           "--output-directory` or the output.directory setting")


def test_registry_declares_output_directory_terminal_only() -> None:
    op = registry.get("research_start")
    assert op.terminal_only_fields == ("output_directory",)
    assert op.terminal_only_refusal("output_directory") == REFUSAL


def test_mcp_refuses_output_directory_and_creates_nothing(core, tmp_path) -> None:
    target = tmp_path / "outside" / "deeper"
    server = build_server(core.app)
    refused, allowed = mcp_call(server, [
        ("research_start", {"brief": "b", "questions": QUESTIONS, "output_directory": str(target)}),
        ("research_start", {"brief": "b", "questions": QUESTIONS}),
    ])
    assert refused.is_error
    payload = mcp_payload(refused)
    assert payload == {"tool": "research_start", "error": REFUSAL, "error_kind": "invalid_input"}
    assert not (tmp_path / "outside").exists()
    assert not allowed.is_error and mcp_payload(allowed)["directory"].startswith(str(core.data_dir / "research"))

    async def schema() -> dict:
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return tools["research_start"].input_schema

    published = anyio.run(schema)
    assert "output_directory" not in published["properties"] and "brief" in published["properties"]
    assert "output_directory" not in published.get("required", [])


def test_terminal_still_chooses_the_folder(tmp_path) -> None:
    target = tmp_path / "chosen"
    out = cli_json("research", "start", "--brief", "b", "-q", "q1=x", "--output-directory", str(target),
                   data_dir=tmp_path / "data")
    assert out["directory"] == str(target / out["research_id"]) and (target / out["research_id"]).is_dir()
