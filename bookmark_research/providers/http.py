"""Capped HTTP reads: the one way a provider response body is read, never more than a fixed size
(and, given a deadline, never for longer than a fixed time).

Every body is read while it streams and the read stops as soon as it passes the cap (a declared
``Content-Length`` over the cap fails before the first byte), so a hostile or broken server cannot
make this process buffer more than the cap. Two forms share one counter:

- :func:`read_capped` for our own ``httpx`` calls (Jina, direct pages and robots.txt, scholarly APIs);
- :class:`CappedTransport` for clients that read bodies themselves (the MCP SDK's Streamable HTTP
  client, which uses ``httpx2``): it wraps each response's stream and remembers what went wrong so
  the caller can classify the failure the SDK reports only as a generic JSON-RPC error.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import httpx2

from bookmark_research.providers.base import ProviderError, classify_http

MAX_RESPONSE_BYTES = 4 * 1024 * 1024  # default cap of one provider response


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"


def too_large(provider: str, limit: int, what: str = "response") -> ProviderError:
    return ProviderError("response_too_large", f"{provider}: {what} larger than {_size(limit)}")


class _Counter:
    """Bytes read so far against the cap (and an optional deadline)."""

    def __init__(self, provider: str, limit: int, what: str, deadline: float | None = None) -> None:
        self.provider, self.limit, self.what, self.deadline, self.total = provider, limit, what, deadline, 0

    def declared(self, headers: Any) -> None:
        value = headers.get("content-length")
        if value and value.isdigit() and int(value) > self.limit:
            raise too_large(self.provider, self.limit, self.what)

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.total > self.limit:
            raise too_large(self.provider, self.limit, self.what)
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise ProviderError("timeout", f"{self.provider}: {self.what} took too long", retryable=True)


def read_capped(response: httpx.Response, provider: str, limit: int = MAX_RESPONSE_BYTES, *,
                what: str = "response", deadline: float | None = None) -> bytes:
    """The body of a response opened with ``client.stream(...)``, read at most ``limit`` bytes far.

    Raises a ``response_too_large`` :class:`ProviderError` (or ``timeout`` past ``deadline``); the
    rest of the body is never read. The bytes are also handed to ``response`` so ``.json()`` works.
    """
    counter = _Counter(provider, limit, what, deadline)
    counter.declared(response.headers)
    body = bytearray()
    for chunk in response.iter_bytes():
        counter.add(chunk)
        body.extend(chunk)
    data = bytes(body)
    response._content = data  # noqa: SLF001  (so .json() / .text use the capped body)
    return data


class ResponseRefused(httpx2.StreamError):
    """Raised inside the SDK's read (too large, too slow): a StreamError, which the SDK turns into an
    error reply for the pending call rather than leaving it hanging."""


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, counter: _Counter, owner: CappedTransport) -> None:
        self.inner, self.counter, self.owner = inner, counter, owner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            try:
                self.counter.add(chunk)
            except ProviderError as exc:
                self.owner.failure = exc
                raise ResponseRefused(exc.message) from None
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class CappedTransport(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport whose responses are capped while they stream.

    ``failure`` holds the first classified problem it saw (an oversized body, or an HTTP error
    status with its ``Retry-After``), for callers whose client library hides it.
    """

    def __init__(self, provider: str, limit: int = MAX_RESPONSE_BYTES, inner: httpx2.AsyncBaseTransport | None = None,
                 seconds: float | None = None) -> None:
        self.provider, self.limit, self.seconds = provider, limit, seconds
        self.inner = inner or httpx2.AsyncHTTPTransport(retries=0)
        self.failure: ProviderError | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if request.method == "POST" and response.status_code >= 400 and self.failure is None:  # a JSON-RPC call
            self.failure = classify_http(self.provider, response.status_code, response.headers.get("retry-after"))
        # A JSON-RPC call's answer (a POST) must also arrive within ``seconds``, however slowly it streams;
        # the long-lived GET stream for server notifications has no deadline, only the size cap.
        deadline = time.monotonic() + self.seconds if self.seconds and request.method == "POST" else None
        counter = _Counter(self.provider, self.limit, "response", deadline)
        try:
            counter.declared(response.headers)
        except ProviderError as exc:
            self.failure = exc
            await response.aclose()
            raise ResponseRefused(exc.message) from None
        response.stream = _CappedStream(response.stream, counter, self)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
