"""Loopback stand-ins for the remote MCP providers, built with the MCP SDK and served over Streamable HTTP."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn
from mcp.server import MCPServer

ARTICLE_TEXT = "Reciprocal rank fusion merges ranked lists by summing 1/(60 + rank). " * 12
SEEN: dict[str, list[dict[str, Any]]] = {}
#: Credential headers each stand-in received (provider → header values), so canary tests can prove a
#: request carrying the key really was sent.
KEYS_SEEN: dict[str, list[str]] = {}
HUGE_BYTES = 6 * 1024 * 1024  # a tool result larger than any provider response we accept


class _Gate:
    """ASGI wrapper: records credential headers; a key containing ``-401-`` is refused with HTTP 401."""

    def __init__(self, app: Any, name: str) -> None:
        self.app, self.name = app, name

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            key = headers.get("x-api-key") or headers.get("authorization")
            if key:
                KEYS_SEEN.setdefault(self.name, []).append(key)
            if key and "-401-" in key:
                body = f"invalid key {key}".encode("latin-1", "replace")  # an upstream that echoes the key
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _exa() -> MCPServer:
    server = MCPServer(name="fake-exa")

    @server.tool()
    def web_search_exa(query: str, numResults: int = 5) -> str:  # noqa: N803  (the real tool's names)
        SEEN.setdefault("exa", []).append({"tool": "web_search_exa", "query": query, "numResults": numResults})
        if "boom" in query:
            raise ValueError("upstream exploded")
        rows = ["Title: Shared\nURL: https://Shared.example:443/page#intro\nText: both providers"]
        rows += [f"Title: Result {i} for {query}\nURL: https://example.org/{query.replace(' ', '-')}/{i}\n"
                 f"Text: snippet {i}" for i in range(1, numResults)]
        return "\n\n".join(rows)

    @server.tool()
    def web_fetch_exa(urls: list[str], maxCharacters: int = 3000) -> dict[str, Any]:  # noqa: N803
        SEEN.setdefault("exa", []).append({"tool": "web_fetch_exa", "urls": urls})
        if any("huge" in u for u in urls):
            return {"results": [{"url": u, "title": "Huge", "text": "x" * HUGE_BYTES} for u in urls]}
        return {"results": [{"url": u, "title": "Fetched", "text": ARTICLE_TEXT[:maxCharacters]}
                            for u in urls if "missing" not in u]}

    return server


def _tavily() -> MCPServer:
    server = MCPServer(name="fake-tavily")

    @server.tool(name="tavily_search")
    def tavily_search(query: str, max_results: int = 5, search_depth: str = "basic") -> dict[str, Any]:
        SEEN.setdefault("tavily", []).append({"tool": "tavily_search", "query": query})
        if "quota" in query:
            return {"error": {"code": "usage_limit_exceeded"}, "retry_after_seconds": 30}
        return {"results": [{"url": "https://shared.example/page", "title": "Shared", "content": "tavily view"},
                            {"url": "https://tavily.example/only", "title": "Only tavily", "content": "x"}]}

    return server


def _parallel() -> MCPServer:
    server = MCPServer(name="fake-parallel")

    @server.tool()
    def web_search(objective: str, search_queries: list[str], session_id: str | None = None) -> dict[str, Any]:
        SEEN.setdefault("parallel", []).append({"tool": "web_search", "objective": objective,
                                                "search_queries": search_queries})
        return {"search_id": "s1", "results": [{"url": "https://parallel.example/a", "title": "P",
                                                "excerpts": ["first excerpt", "second"]}]}

    @server.tool()
    def web_fetch(urls: list[str], full_content: bool = False) -> dict[str, Any]:
        SEEN.setdefault("parallel", []).append({"tool": "web_fetch", "urls": urls, "full_content": full_content})
        return {"results": [{"url": u, "title": "P", "excerpts": ["only an excerpt"]} for u in urls]}

    return server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RemoteProviders:
    """Runs fake exa, tavily and parallel servers; ``endpoints`` maps provider names to their loopback URLs."""

    def __init__(self) -> None:
        self.servers: list[uvicorn.Server] = []
        self.threads: list[threading.Thread] = []
        self.endpoints: dict[str, str] = {}

    def __enter__(self) -> RemoteProviders:
        SEEN.clear()
        KEYS_SEEN.clear()
        for name, factory in (("exa", _exa), ("tavily", _tavily), ("parallel", _parallel)):
            port = _free_port()
            app = _Gate(factory().streamable_http_app(host="127.0.0.1"), name)
            server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on"))
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            self.servers.append(server)
            self.threads.append(thread)
            self.endpoints[name] = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 10
        while not all(s.started for s in self.servers) and time.monotonic() < deadline:
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self.servers:
            server.should_exit = True
        for thread in self.threads:
            thread.join(timeout=10)
