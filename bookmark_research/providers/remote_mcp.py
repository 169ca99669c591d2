"""Exa, Parallel and Tavily through their remote MCP servers (Streamable HTTP, official SDK client).

Endpoints are fixed here, never taken from tool input. Keys are optional: each service also has a
keyless or anonymous mode. Keys travel only as headers of requests to the fixed endpoint (the SDK
refuses cross-origin redirects) and no proxy is taken from the environment for credentialed calls.
Only arguments the remote tool's input schema declares are sent.
"""

from __future__ import annotations

import contextlib
import json
import re
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.from_thread
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from bookmark_research.config.settings import Settings
from bookmark_research.evidence.archive import PageCapture
from bookmark_research.providers.base import USER_AGENT, FetchAttempt, ProviderError, api_key, classify_http
from bookmark_research.providers.extract import classify_text
from bookmark_research.providers.http import MAX_RESPONSE_BYTES, CappedTransport

ENDPOINTS = {
    "exa": "https://mcp.exa.ai/mcp?tools=web_search_exa,web_fetch_exa",
    "parallel": "https://search.parallel.ai/mcp",
    "tavily": "https://mcp.tavily.com/mcp/",
}
TOOLS = {
    "exa": {"search": ("web_search_exa",), "fetch": ("web_fetch_exa", "crawling_exa")},
    "parallel": {"search": ("web_search",), "fetch": ("web_fetch",)},
    "tavily": {"search": ("tavily_search", "tavily-search"), "fetch": ("tavily_extract", "tavily-extract")},
}
CREDENTIALS = {"exa": "EXA_API_KEY", "parallel": "PARALLEL_API_KEY", "tavily": "TAVILY_API_KEY"}
_QUOTA = {"monthly_cap_reached_bonus_eligible", "monthly_cap_reached", "usage_limit_exceeded", "insufficient_quota"}
_RATE = {"rate_limit_exceeded", "rate_limited"}
_AUTH = {"invalid_api_key", "missing_api_key", "unauthorized"}


def _search_args(name: str, query: str, limit: int) -> dict[str, Any]:
    return {"exa": {"query": query, "numResults": limit},
            "parallel": {"objective": query, "search_queries": [query]},
            "tavily": {"query": query, "max_results": limit, "search_depth": "basic"}}[name]


def _fetch_args(name: str, urls: list[str], max_characters: int) -> dict[str, Any]:
    return {"exa": {"urls": urls, "maxCharacters": max_characters},
            "parallel": {"urls": urls, "full_content": True},
            "tavily": {"urls": urls, "extract_depth": "basic", "format": "markdown"}}[name]


def _fit(name: str, schema: dict[str, Any], args: dict[str, Any], purpose: str) -> dict[str, Any]:
    """Keep only declared arguments; refuse when the tool now requires something we cannot fill."""
    props = schema.get("properties") or {}
    sent = {k: v for k, v in args.items() if k in props} if props else dict(args)
    if "urls" in args and "urls" not in props and "url" in props:
        if len(args["urls"]) != 1:
            raise ProviderError("schema_mismatch", f"{name}: the fetch tool takes one URL at a time")
        sent["url"] = args["urls"][0]
    missing = [k for k in schema.get("required") or [] if k not in sent]
    if missing:
        shown = ", ".join(m if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", m) else "<unknown>" for m in missing)
        raise ProviderError("schema_mismatch", f"{name}: the {purpose} tool now requires {shown}")
    if not sent:
        raise ProviderError("schema_mismatch", f"{name}: no supported {purpose} fields")
    return sent


def _records(result: Any) -> tuple[list[dict[str, Any]], str]:
    """Result rows from structured content, JSON text blocks, or Exa's text records; plus all text."""
    texts = [getattr(c, "text", "") for c in (result.content or []) if getattr(c, "type", "") == "text"]
    candidates: list[Any] = []
    if result.structured_content is not None:
        candidates.append(result.structured_content)
    for text in texts:
        try:
            candidates.append(json.loads(text))
        except ValueError:
            pass
    for data in candidates:
        for _ in range(3):
            if isinstance(data, dict):
                _envelope_error(data)
                for key in ("results", "search_results", "items", "data", "result", "pages"):
                    if key in data and isinstance(data[key], (list, dict)):
                        data = data[key]
                        break
                else:
                    break
        if isinstance(data, list) and all(isinstance(r, dict) for r in data) and any("url" in r for r in data):
            return [r for r in data if isinstance(r, dict)], "\n".join(texts)
    rows = []
    for block in re.split(r"\n(?=Title: )", "\n".join(texts)):
        title = re.search(r"^Title: (.*)$", block, re.M)
        url = re.search(r"^URL: (\S+)$", block, re.M)
        if url:
            body = re.split(r"^(?:Text|Highlights|Summary): ?", block, maxsplit=1, flags=re.M)
            rows.append({"url": url.group(1), "title": title.group(1).strip() if title else None,
                         "text": body[1].strip() if len(body) > 1 else ""})
    return rows, "\n".join(texts)


def _envelope_error(data: dict[str, Any]) -> None:
    error = data.get("error")
    code = data.get("code") or (error.get("code") if isinstance(error, dict) else None)
    retry = data.get("retry_after_seconds")
    retry_after = float(retry) if isinstance(retry, (int, float)) and 0 <= retry <= 86_400 else None
    if code in _QUOTA:
        raise ProviderError("quota_exhausted", "provider reports its quota is used up", retry_after=retry_after)
    if code in _RATE:
        raise ProviderError("rate_limited", "provider is rate limiting", retryable=True, retry_after=retry_after)
    if code in _AUTH:
        raise ProviderError("authentication_required", "provider requires valid credentials")
    if error and not any(k in data for k in ("results", "search_results", "items")):
        raise ProviderError("tool_error", "provider returned an error envelope")


def _text_of(row: dict[str, Any]) -> str:
    for key in ("full_content", "raw_content", "content", "text", "markdown", "excerpts"):
        value = row.get(key)
        if isinstance(value, list):
            value = "\n".join(str(v) for v in value)
        if isinstance(value, str) and value.strip():
            return value
    return ""


class RemoteMCP:
    """One remote MCP provider, used for search or fetch.

    The first call opens one session (initialize + tools/list) on an event loop running in a helper
    thread; later calls on the same instance reuse it, so a search over twelve targets costs one
    handshake, not twelve. :meth:`close` ends the session.
    """

    def __init__(self, name: str, settings: Settings) -> None:
        self.name = name
        self.endpoint = ENDPOINTS[name]
        self.timeout = settings.timeout_seconds
        self._broken: ProviderError | None = None
        try:
            key = api_key(CREDENTIALS[name], name, settings)
        except ProviderError as exc:  # every call (and a probe) reports it; nothing is sent
            key, self._broken = None, exc
        self.headers = {"User-Agent": USER_AGENT}
        if key:
            self.headers.update({"x-api-key": key} if name == "exa" else {"Authorization": f"Bearer {key}"})
        elif name == "tavily":
            self.headers["X-Tavily-Access-Mode"] = "keyless"
        self.credentialed = bool(key)
        self._portal_cm: Any = None
        self._portal: Any = None
        self._session_cm: Any = None
        self._session: tuple[Any, dict[str, Any]] | None = None
        self._transport: CappedTransport | None = None

    def _proxy(self) -> str | None:
        """A proxy from the environment, for keyless calls only (a key is never handed to a proxy)."""
        if self.credentialed:
            return None
        host = httpx2.URL(self.endpoint).host
        return None if urllib.request.proxy_bypass(host) else urllib.request.getproxies().get("https")

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[tuple[Any, dict[str, Any]]]:
        # Every body the SDK reads streams through a capped transport (MAX_RESPONSE_BYTES per response).
        self._transport = CappedTransport(self.name, MAX_RESPONSE_BYTES,
                                          httpx2.AsyncHTTPTransport(retries=0, proxy=self._proxy()), self.timeout)
        http = httpx2.AsyncClient(headers=self.headers, trust_env=False, transport=self._transport,
                                  timeout=httpx2.Timeout(self.timeout, connect=3.0))
        async with http, Client(streamable_http_client(self.endpoint, http_client=http)) as client:
            yield client, {t.name: t for t in (await client.list_tools()).tools}

    def _connected(self) -> tuple[Any, dict[str, Any]]:
        if self._broken is not None:
            raise self._broken
        if self._session is None:
            try:
                self._portal_cm = anyio.from_thread.start_blocking_portal()
                self._portal = self._portal_cm.__enter__()
                self._session_cm = self._portal.wrap_async_context_manager(self._open())
                self._session = self._session_cm.__enter__()
            except Exception as exc:  # exception groups from the SDK's task group included
                self._broken = exc if isinstance(exc, ProviderError) else self._classify(exc)
                self.close()
                raise self._broken from None
        return self._session

    def close(self) -> None:
        for attr in ("_session_cm", "_portal_cm"):
            cm = getattr(self, attr)
            setattr(self, attr, None)
            if cm is not None:
                try:
                    cm.__exit__(None, None, None)
                except BaseException:  # closing a failed session must not hide the original error
                    pass
        self._session = self._portal = None

    def _call(self, purpose: str, args: dict[str, Any]) -> Any:
        client, tools = self._connected()
        tool = next((tools[n] for n in TOOLS[self.name][purpose] if n in tools), None)
        if tool is None:
            raise ProviderError("capability_unavailable", f"{self.name}: the server does not offer its {purpose} tool")
        arguments = _fit(self.name, tool.input_schema, args, purpose)
        if self._transport is not None:
            self._transport.failure = None
        try:
            result = self._portal.call(client.call_tool, tool.name, arguments)
        except ProviderError:
            raise
        except Exception as exc:
            raise self._classify(exc) from None
        if result.is_error:
            _records(result)  # classify error envelopes first
            raise ProviderError("tool_error", f"{self.name}: the {purpose} tool reported an error")
        return tool.name, result

    def probe(self) -> dict[str, Any]:
        """Initialize and list tools (no tool call, no quota used); report what search and fetch would use."""
        try:
            _, tools = self._connected()
        except ProviderError as exc:
            return {"status": "error", **exc.to_dict()}
        finally:
            self.close()
        names = sorted(tools)
        capabilities = {purpose: {"status": "supported", "tool": next(n for n in wanted if n in names)}
                        if any(n in names for n in wanted) else {"status": "unsupported"}
                        for purpose, wanted in TOOLS[self.name].items()}
        return {"status": "ok", "tools": names, "capabilities": capabilities}

    def _classify(self, exc: BaseException) -> ProviderError:
        inner = exc
        while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
            inner = inner.exceptions[0]
        if isinstance(inner, ProviderError):
            return inner
        seen = self._transport.failure if self._transport is not None else None
        if seen is not None:  # what the transport saw (oversized body, HTTP status) is more precise than the SDK's
            return seen
        if isinstance(inner, httpx2.TimeoutException) or isinstance(inner, TimeoutError):
            return ProviderError("timeout", f"{self.name}: request timed out", retryable=True)
        if isinstance(inner, httpx2.HTTPStatusError):
            return classify_http(self.name, inner.response.status_code, inner.response.headers.get("retry-after"))
        if isinstance(inner, MCPError):
            code = getattr(getattr(inner, "error", None), "code", None)
            kind = {-32602: "schema_mismatch", -32601: "tool_unavailable"}.get(code, "rpc_error")
            return ProviderError(kind, f"{self.name}: MCP error {code}")
        if isinstance(inner, (httpx2.HTTPError, OSError)):
            return ProviderError("connection_error", f"{self.name}: cannot reach the MCP endpoint", retryable=True)
        return ProviderError("provider_error", f"{self.name}: provider failed ({type(inner).__name__})")

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        _, result = self._call("search", _search_args(self.name, query, limit))
        rows, _ = _records(result)
        if not rows and (result.structured_content or any(getattr(c, "text", "") for c in result.content or [])):
            raise ProviderError("result_format", f"{self.name}: unrecognised result format")
        return [{"url": r.get("url"), "title": r.get("title"),
                 "snippet": r.get("snippet") or r.get("description") or _text_of(r)[:500]} for r in rows][:limit]

    def fetch(self, urls: list[str], max_characters: int) -> FetchAttempt:
        args = _fetch_args(self.name, urls, max_characters)
        tool, result = self._call("fetch", args)
        rows, _ = _records(result)
        raw = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        pages = []
        for url in urls:
            row = next((r for r in rows if r.get("url") in (url, url.rstrip("/"), url + "/")), None)
            if row is None and len(urls) == 1 and len(rows) == 1:
                row = rows[0]
            if row is None:
                pages.append(PageCapture(url, extraction_status="unrecognized_or_not_returned", content_kind="unknown"))
                continue
            judged = classify_text(_text_of(row), row.get("url") if isinstance(row.get("url"), str) else url)
            text, status = judged.text, judged.status
            kind = "provider_excerpts" if "excerpts" in row and not row.get("full_content") else "provider_extracted_text"
            if kind == "provider_excerpts":
                status = "insufficient_content"  # excerpts are not the page
            pages.append(PageCapture(url, row.get("url"), row.get("title") or judged.title, text[:max_characters],
                                     status, kind, judged.truncated or len(text) > max_characters,
                                     **judged.metadata()))
        return FetchAttempt(self.name, tool, {"urls": urls, "arguments": args}, pages, raw=raw)
