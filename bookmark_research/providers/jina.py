"""Jina Reader (``https://r.jina.ai/<url>``): page text as JSON; works without a key, faster with one.

The key (``JINA_API_KEY``, environment or settings file) travels only in the Authorization header
of a request to the fixed endpoint; redirects are refused and no proxy is taken from the
environment for credentialed calls, so it cannot be forwarded anywhere else.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from bookmark_research.config.settings import Settings
from bookmark_research.evidence.archive import PageCapture
from bookmark_research.providers.base import USER_AGENT, FetchAttempt, ProviderError, api_key, classify_http
from bookmark_research.providers.extract import classify_text
from bookmark_research.providers.http import read_capped

READER = "https://r.jina.ai/"


class JinaReader:
    name = "jina"

    def __init__(self, settings: Settings, transport: httpx.BaseTransport | None = None) -> None:
        self.key = api_key("JINA_API_KEY", "jina", settings)
        self.timeout = settings.timeout_seconds
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        self.client = httpx.Client(transport=transport, headers=headers, follow_redirects=False,
                                   trust_env=not self.key,
                                   timeout=httpx.Timeout(settings.timeout_seconds, connect=3.0))

    def close(self) -> None:
        self.client.close()

    def fetch(self, urls: list[str], max_characters: int) -> FetchAttempt:
        pages: list[PageCapture] = []
        raw: list[Any] = []
        for url in urls:
            try:
                data = self._read(url)
            except ProviderError as exc:
                raw.append({"url": url, **exc.to_dict()})
                pages.append(PageCapture(url, extraction_status="provider_error", content_kind="unknown",
                                         error=exc.message, error_kind=exc.kind, http_status=exc.http_status))
                continue
            raw.append(data)
            body = data.get("data") if isinstance(data, dict) else None
            if not isinstance(body, dict):
                pages.append(PageCapture(url, extraction_status="provider_error", content_kind="unknown",
                                         error="jina: unrecognised response", error_kind="result_format"))
                continue
            page_url = body.get("url") if isinstance(body.get("url"), str) else None
            judged = classify_text(body.get("content") if isinstance(body.get("content"), str) else "", page_url or url)
            text = judged.text
            title = body.get("title") if isinstance(body.get("title"), str) and body["title"].strip() else judged.title
            pages.append(PageCapture(url, page_url, title, text[:max_characters], judged.status,
                                     "provider_extracted_text", judged.truncated or len(text) > max_characters, **judged.metadata()))
        return FetchAttempt(self.name, "reader", {"urls": urls, "max_characters": max_characters}, pages,
                            raw={"responses": raw})

    def _read(self, url: str) -> dict[str, Any]:
        try:
            deadline = time.monotonic() + self.timeout  # the whole request, however slowly the body trickles
            with self.client.stream("GET", READER + url) as response:
                if response.is_redirect:
                    raise ProviderError("http_error", f"jina HTTP {response.status_code} (redirect refused)",
                                        http_status=response.status_code)
                if response.status_code >= 400:
                    raise classify_http("jina", response.status_code, response.headers.get("retry-after"))
                body = read_capped(response, "jina", deadline=deadline)
        except httpx.TimeoutException:
            raise ProviderError("timeout", "jina: request timed out", retryable=True) from None
        except httpx.HTTPError as exc:
            raise ProviderError("connection_error", f"jina: request failed ({type(exc).__name__})",
                                retryable=True) from None
        try:
            data = json.loads(body)
        except ValueError:
            raise ProviderError("result_format", "jina: response is not JSON") from None
        if not isinstance(data, dict):
            raise ProviderError("result_format", "jina: unrecognised response")
        return data


SEARCH = "https://s.jina.ai/"


class JinaSearch:
    """Jina Search (``https://s.jina.ai/?q=``); needs ``JINA_API_KEY``."""

    name = "jina"
    required_credential = "JINA_API_KEY"

    def __init__(self, settings: Settings, transport: httpx.BaseTransport | None = None) -> None:
        self.key = api_key("JINA_API_KEY", "jina", settings)
        if not self.key:
            raise ProviderError("authentication_required", "jina search requires JINA_API_KEY")
        self.timeout = settings.timeout_seconds
        self.client = httpx.Client(transport=transport, follow_redirects=False, trust_env=False,
                                   headers={"User-Agent": USER_AGENT, "Accept": "application/json",
                                            "Authorization": f"Bearer {self.key}"},
                                   timeout=httpx.Timeout(settings.timeout_seconds, connect=3.0))

    def close(self) -> None:
        self.client.close()

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        try:
            deadline = time.monotonic() + self.timeout
            with self.client.stream("GET", SEARCH, params={"q": query}) as response:
                if response.status_code >= 300:
                    raise classify_http("jina", response.status_code, response.headers.get("retry-after"))
                body = read_capped(response, "jina", deadline=deadline)
        except httpx.TimeoutException:
            raise ProviderError("timeout", "jina: search timed out", retryable=True) from None
        except httpx.HTTPError as exc:
            raise ProviderError("connection_error", f"jina: request failed ({type(exc).__name__})",
                                retryable=True) from None
        try:
            data = json.loads(body)
        except ValueError:
            raise ProviderError("result_format", "jina: search response is not JSON") from None
        rows = data.get("data") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise ProviderError("result_format", "jina: unrecognised search response")
        return [{"url": r.get("url"), "title": r.get("title"),
                 "snippet": r.get("description") or (r.get("content") or "")[:500]}
                for r in rows[:limit] if isinstance(r, dict)]
