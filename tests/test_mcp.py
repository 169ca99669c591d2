"""The MCP server: tools generated from the registry, driven by the SDK's in-memory and stdio clients."""

from __future__ import annotations

import sys
import time
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bookmark_research.core.app import App
from bookmark_research.core.registry import all_operations
from bookmark_research.mcp.server import build_server
from bookmark_research.sources.live import Timing
from tests.conftest import mcp_call as _call
from tests.conftest import mcp_payload as _payload
from tests.packages import FIXTURES, TEMP_PATH, make_demo, read_json, write_json


def test_tools_are_the_registry_with_closed_schemas(app):
    async def go() -> Any:
        async with Client(build_server(app)) as client:
            return await client.list_tools()

    tools = {t.name: t for t in anyio.run(go).tools}
    assert set(tools) == {name for name, op in all_operations().items() if op.mcp}
    assert "set_setting" not in tools  # credentials are set from a terminal only
    for name, tool in tools.items():
        op = all_operations()[name]
        assert tool.input_schema.get("additionalProperties") is False, name
        assert tool.output_schema and tool.output_schema["type"] == "object"
        assert tool.description == op.summary
        assert tool.annotations.read_only_hint is op.read_only
    hints = {name: (t.annotations.read_only_hint, t.annotations.destructive_hint, t.annotations.open_world_hint)
             for name, t in tools.items()}
    for name in ("search_web", "fetch_web", "literature_search", "search_providers", "research_search",
                 "research_fetch"):
        assert hints[name][2] is True, name  # these reach the internet
    for name in ("research_start", "research_record", "research_import_evidence", "research_finish",
                 "research_search", "research_fetch", "wiki_write", "wiki_acknowledge"):
        assert hints[name][:2] == (False, False), name  # they add records; nothing is overwritten or deleted
    for name in ("research_status", "research_coverage", "research_source", "wiki_get", "wiki_search",
                 "evaluate_research"):
        assert hints[name] == (True, False, False), name
    for name in ("search_bookmarks", "get_context"):
        assert hints[name] == (False, False, False), name  # a query may re-sync a live source: not read-only
    for name in ("index_status", "source_history", "doctor", "search_archive", "search_plan", "get_settings"):
        assert hints[name] == (True, False, False), name
    for name in ("sync_package", "source_restore", "source_remove", "source_merge"):
        assert hints[name] == (False, True, False), name
    search = tools["search_bookmarks"].input_schema
    assert search["required"] == ["source_id"]
    assert search["properties"]["limit"]["maximum"] == 1000
    assert search["properties"]["order"]["enum"] == ["relevance", "tree"]


def test_happy_paths_return_structured_content_and_the_same_text(app, tmp_path):
    demo = make_demo(tmp_path / "export")
    results = _call(build_server(app), [
        ("sync_package", {"package_path": str(demo), "source_id": "d"}),
        ("index_status", {}),
        ("search_bookmarks", {"source_id": "d", "targets": ["示例公司甲", "%_"], "limit": 1}),
        ("get_context", {"source_id": "d", "item_id": "bookmark-alpha"}),
        ("source_history", {"source_id": "d"}),
        ("doctor", {}),
        ("source_remove", {"source_id": "d"}),
    ])
    for r in results:
        assert not r.is_error, r.content[0].text
        assert r.structured_content == _payload(r)
    sync, status, search, context, history, doctor, remove = (r.structured_content for r in results)
    assert sync["counts"]["bookmarks"] == 5 and status["sources"][0]["bookmarks"] == 5
    assert search["total"] == 2 and [t["total"] for t in search["targets"]] == [1, 1]
    assert [a["item_id"] for a in context["items"][0]["ancestors"]] == ["root", "companies"]
    version = history["versions"][0]["version_id"]
    assert doctor["fts5"] is True and remove["status"] == "confirmation_required"
    restored, removed = _call(build_server(app), [
        ("source_restore", {"source_id": "d", "version_id": version}),
        ("source_remove", {"source_id": "d", "confirm": True}),
    ])
    assert restored.structured_content["version_id"] == version
    assert removed.structured_content["status"] == "removed"


@pytest.mark.parametrize("name,args,field", [
    ("sync_package", {}, "package_path"),
    ("sync_package", {"package_path": "x", "mode": "sometimes"}, "mode"),
    ("index_status", {"source_id": ""}, "source_id"),
    ("source_history", {"source_id": "d", "limit": 101}, "limit"),
    ("source_restore", {"source_id": "d"}, "version_id"),
    ("source_remove", {"source_id": "d", "confirm": "yes"}, "confirm"),
    ("source_merge", {"source_id": "d"}, "into_source_id"),
    ("search_bookmarks", {"source_id": "d", "limit": 1001}, "limit"),
    ("search_bookmarks", {"source_id": "d", "limit": True}, "limit"),
    ("search_bookmarks", {"source_id": "d", "targets": "one"}, "targets"),
    ("search_bookmarks", {"source_id": "d", "offset": -1}, "offset"),
    ("search_bookmarks", {"source_id": "d", "refresh": "false"}, "refresh"),
    ("search_bookmarks", {"source_id": "d", "sql": "DROP TABLE items"}, "sql"),
    ("get_context", {"source_id": "d", "item": "x"}, "item"),
    ("doctor", {"verbose": True}, "verbose"),
    ("fetch_web", {"urls": []}, "urls"),
    ("fetch_web", {"urls": ["https://e.com/"], "max_characters": 10}, "max_characters"),
    ("search_archive", {"query": ""}, "query"),
    ("get_settings", {"x": 1}, "x"),
    ("update_settings", {"changes": {}}, "changes"),
    ("search_web", {"targets": []}, "targets"),
    ("search_web", {"targets": [{"target": "t", "query": "q", "extra": 1}]}, "extra"),
    ("literature_search", {"query": "x", "mode": "fast"}, "mode"),
    ("search_plan", {}, "query"),
    ("search_providers", {"probe": "yes"}, "probe"),
])
def test_invalid_arguments_are_rejected_before_any_work(app, name, args, field):
    (result,) = _call(build_server(app), [(name, args)])
    assert result.is_error
    payload = _payload(result)
    assert payload["error_kind"] == "invalid_input" and field in payload["error"] and payload["tool"] == name
    assert not app.db_path.exists() and not app.data_dir.exists()


@pytest.mark.parametrize("name,args,kind", [
    ("sync_package", {"package_path": "/definitely/not/here"}, "invalid_input"),
    ("index_status", {"source_id": "nope"}, "not_found"),
    ("source_history", {"source_id": "nope"}, "not_found"),
    ("source_restore", {"source_id": "d", "version_id": "v-nope"}, "not_found"),
    ("source_remove", {"source_id": "nope", "confirm": True}, "not_found"),
    ("source_merge", {"source_id": "d", "into_source_id": "nope"}, "not_found"),
    ("search_bookmarks", {"source_id": "d", "section": "Z"}, "not_found"),
    ("get_context", {"source_id": "d", "group_id": "nope"}, "not_found"),
    ("fetch_web", {"urls": ["ftp://e.com/x"]}, "invalid_input"),
    ("update_settings", {"changes": {"direct.max_bytes": 1}}, "invalid_input"),
])
def test_runtime_failures_are_is_error_with_a_kind(app, tmp_path, name, args, kind):
    demo = make_demo(tmp_path / "export")
    sync, result = _call(build_server(app), [("sync_package", {"package_path": str(demo), "source_id": "d"}),
                                             (name, args)])
    assert not sync.is_error and result.is_error
    payload = _payload(result)
    assert payload["error_kind"] == kind and "Traceback" not in payload["error"]


def test_invalid_package_keeps_the_index(app, tmp_path):
    demo = make_demo(tmp_path / "export")
    server = build_server(app)
    (ok,) = _call(server, [("sync_package", {"package_path": str(demo), "source_id": "d"})])
    (demo / TEMP_PATH).write_text("{oops", encoding="utf-8")
    bad, status = _call(server, [("sync_package", {"package_path": str(demo), "source_id": "d"}),
                                 ("index_status", {"source_id": "d"})])
    assert bad.is_error and "line 1" in _payload(bad)["error"]
    assert status.structured_content["sources"][0]["source"]["version_id"] == ok.structured_content["version_id"]


def test_server_watches_live_sources_while_it_runs(tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    pkg = make_demo(tmp_path / "repo" / "export")

    async def go() -> tuple[Any, Any]:
        with App(tmp_path / "data") as app:
            async with Client(build_server(app, watch=Timing(0.1, 0.5))) as client:
                first = await client.call_tool("sync_package", {"package_path": str(pkg), "source_id": "L"})
                assert first.structured_content["mode"] == "live"
                await anyio.sleep(0.3)
                data = read_json(pkg / TEMP_PATH)
                data["items"][0]["children"][0]["note"] = "server-watched"
                write_json(pkg / TEMP_PATH, data)
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    found = await client.call_tool("search_bookmarks", {"source_id": "L", "targets": ["server-watched"],
                                                                        "refresh": False, "count_only": True})
                    if found.structured_content["total"] == 1:
                        break
                    await anyio.sleep(0.1)
                status = await client.call_tool("index_status", {})
            return found, status

    found, status = anyio.run(go)
    assert found.structured_content["total"] == 1
    assert found.structured_content["refresh"]["mode"] == "saved_snapshot"
    assert status.structured_content["watcher"]["running"] is True
    assert not (tmp_path / "data" / "watcher.json").exists()  # stopped with the server


def test_stdio_server_subprocess(tmp_path):
    params = StdioServerParameters(command=sys.executable, args=["-m", "bookmark_research", "serve"],
                                   env={"BOOKMARK_RESEARCH_DATA_DIR": str(tmp_path / "data")})

    async def go() -> tuple[Any, Any, Any]:
        async with Client(params) as client:
            tools = await client.list_tools()
            synced = await client.call_tool("sync_package", {"package_path": str(FIXTURES / "sample-zh"),
                                                             "source_id": "zh", "mode": "snapshot"})
            found = await client.call_tool("search_bookmarks", {"source_id": "zh", "targets": ["推理 加速"]})
            return tools, synced, found

    tools, synced, found = anyio.run(go)
    assert "search_bookmarks" in {t.name for t in tools.tools}
    assert synced.structured_content["counts"]["bookmarks"] == 10
    assert found.structured_content["total"] == 3
    assert found.structured_content["results"][0]["snippet"]["text"]


def test_failed_fetch_is_is_error_with_the_full_payload(app, tmp_path, monkeypatch):
    monkeypatch.setenv("BOOKMARK_RESEARCH_CONFIG", str(tmp_path / "settings.json"))
    (result,) = _call(build_server(app), [("fetch_web", {"urls": ["http://127.0.0.1:9/"], "provider": "direct"})])
    assert result.is_error and result.structured_content["status"] == "error"
    assert result.structured_content["pages"][0]["error_kind"] == "private_address"
