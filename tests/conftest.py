from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bookmark_research.core.app import App
from bookmark_research.core.registry import run
from tests.packages import make_demo


class Core:
    """Drives the core registry directly against a real data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.app = App(data_dir)

    def __call__(self, name: str, **arguments: Any) -> dict[str, Any]:
        return run(self.app, name, arguments).model_dump(mode="json")

    def sync(self, path: Path | str, **kw: Any) -> dict[str, Any]:
        return self("sync_package", package_path=str(path), **kw)

    def search(self, source_id: str, *targets: str, **kw: Any) -> dict[str, Any]:
        return self("search_bookmarks", source_id=source_id, targets=list(targets), **kw)

    def total(self, source_id: str, *targets: str, **kw: Any) -> int:
        return self.search(source_id, *targets, count_only=True, **kw)["total"]

    def context(self, source_id: str, **kw: Any) -> dict[str, Any]:
        return self("get_context", source_id=source_id, **kw)

    def status(self, source_id: str | None = None) -> dict[str, Any]:
        out = self("index_status", **({"source_id": source_id} if source_id else {}))
        return out["sources"][0] if source_id else out

    def revisions(self, source_id: str) -> dict[tuple[str, str], tuple[int, int]]:
        conn = self.app.connect()
        return {(s, i): (pk, rev) for s, i, pk, rev in conn.execute(
            "SELECT section_id, item_id, pk, revision FROM items WHERE source_id=?", (source_id,))}

    def reopen(self) -> None:
        self.app.close()
        self.app = App(self.data_dir)


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the user's settings file or sees real provider keys."""
    monkeypatch.setenv("BOOKMARK_RESEARCH_CONFIG", str(tmp_path / "isolated-config" / "settings.json"))
    import bookmark_research.providers.remote_mcp as remote_mcp

    # No test may reach a real provider: remote MCP endpoints point at a closed loopback port.
    monkeypatch.setattr(remote_mcp, "ENDPOINTS", {name: "http://127.0.0.1:9/mcp" for name in remote_mcp.ENDPOINTS})
    for name in ("EXA_API_KEY", "PARALLEL_API_KEY", "TAVILY_API_KEY", "JINA_API_KEY", "OPENALEX_API_KEY",
                 "SEMANTIC_SCHOLAR_API_KEY", "NCBI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def stand_in_providers() -> Any:
    """Stand-in exa, tavily and parallel MCP servers on loopback (tests/remote_providers.py), shared by the session."""
    from tests.remote_providers import RemoteProviders

    with RemoteProviders() as running:
        yield running


@pytest.fixture
def core(tmp_path: Path) -> Core:
    c = Core(tmp_path / "data")
    yield c
    c.app.close()


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return make_demo(tmp_path / "export")


@pytest.fixture
def app(tmp_path: Path) -> App:
    with App(tmp_path / "data") as a:
        yield a


def mcp_call(server: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Call tools in order through the SDK's in-memory client."""
    import anyio
    from mcp import Client

    async def go() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def mcp_payload(result: Any) -> dict[str, Any]:
    return json.loads(result.content[0].text)


def run_cli(*args: str, data_dir: Path | None = None, env: dict[str, str] | None = None,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items()
                if not k.startswith("BOOKMARK_RESEARCH_") or k == "BOOKMARK_RESEARCH_CONFIG"}
    full_env.update(env or {})
    if data_dir is not None:
        full_env["BOOKMARK_RESEARCH_DATA_DIR"] = str(data_dir)
    return subprocess.run([sys.executable, "-m", "bookmark_research", *args], capture_output=True, text=True,
                          env=full_env, input=input, timeout=120)


def cli_json(*args: str, data_dir: Path, expect: int = 0, **kw: Any) -> dict[str, Any]:
    proc = run_cli(*args, "--json", data_dir=data_dir, **kw)
    assert proc.returncode == expect, proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)
