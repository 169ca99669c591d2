"""``direct``: a keyless fetcher that GETs the page itself and extracts its main text.

Safety first: every address a host resolves to is checked *at connect time* (so DNS rebinding
cannot slip a private address past an earlier check) and private, loopback, link-local and other
non-global addresses are refused unless ``direct.allow_private_networks`` is true. No proxy is taken
from the environment (it would bypass that check). Only same-site redirects are followed (never
https → http), bodies and time are capped, robots.txt is honoured and requests to one host are
spaced by a politeness interval.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
import urllib.robotparser
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from bookmark_research.config.settings import DirectSettings
from bookmark_research.evidence.archive import PageCapture
from bookmark_research.providers.base import USER_AGENT, FetchAttempt, ProviderError
from bookmark_research.providers.extract import decode_body, extract_html, looks_binary
from bookmark_research.providers.http import read_capped

MAX_REDIRECTS = 5
MAX_ROBOTS_BYTES = 512 * 1024


class BlockedAddress(httpcore.ConnectError):
    """The host resolves to an address the policy refuses."""


def check_address(ip: str, allow_private: bool) -> None:
    addr = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if addr.is_unspecified or addr.is_multicast or (not allow_private and not addr.is_global):
        raise BlockedAddress("non-public address")


class _GuardedBackend(httpcore.SyncBackend):
    """Resolves the host itself, checks every address, then connects to a checked address."""

    def __init__(self, allow_private: bool) -> None:
        self.allow_private = allow_private

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise httpcore.ConnectError(f"cannot resolve host ({type(exc).__name__})") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for ip in addresses:
            check_address(ip, self.allow_private)
        last: Exception | None = None
        for ip in addresses:
            try:
                return super().connect_tcp(ip, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                last = exc
        raise last or httpcore.ConnectError("no address to connect to")


class _GuardedTransport(httpx.HTTPTransport):
    def __init__(self, allow_private: bool) -> None:
        super().__init__(retries=0)
        # Same pool httpx builds, with the guarded network backend.
        self._pool = httpcore.ConnectionPool(ssl_context=httpx.create_ssl_context(), max_connections=8,
                                             network_backend=_GuardedBackend(allow_private))


def _site(url: str) -> str:
    host = (urlsplit(url).hostname or "").lower()
    return host[4:] if host.startswith("www.") else host


def same_site(origin: str, target: str) -> bool:
    a, b = urlsplit(origin), urlsplit(target)
    if b.scheme not in ("http", "https") or (a.scheme == "https" and b.scheme == "http"):
        return False
    return _site(origin) == _site(target)


class DirectFetcher:
    name = "direct"

    def __init__(self, settings: DirectSettings, transport: httpx.BaseTransport | None = None) -> None:
        self.settings = settings
        timeout = httpx.Timeout(settings.timeout_seconds, connect=min(3.0, settings.timeout_seconds))
        self.client = httpx.Client(transport=transport or _GuardedTransport(settings.allow_private_networks),
                                   follow_redirects=False, timeout=timeout, trust_env=False,
                                   headers={"User-Agent": USER_AGENT, "Accept": "text/html,text/plain;q=0.9,*/*;q=0.1"})
        self.robots: dict[str, urllib.robotparser.RobotFileParser | None] = {}
        self.last_request: dict[str, float] = {}
        self.lock = threading.Lock()

    def close(self) -> None:
        self.client.close()

    # --- politeness -----------------------------------------------------------------------------

    def _wait_turn(self, url: str) -> None:
        host = urlsplit(url).netloc
        with self.lock:
            due = self.last_request.get(host, 0.0) + self.settings.min_interval_seconds
            pause = due - time.monotonic()
            self.last_request[host] = max(due, time.monotonic())
        if pause > 0:
            time.sleep(pause)

    def _allowed_by_robots(self, url: str) -> bool:
        if not self.settings.respect_robots:
            return True
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self.robots:
            parser: urllib.robotparser.RobotFileParser | None = None
            try:
                with self.client.stream("GET", origin + "/robots.txt") as response:
                    if response.status_code == 200:
                        body = read_capped(response, "direct", MAX_ROBOTS_BYTES, what="robots.txt")
                        parser = urllib.robotparser.RobotFileParser()
                        parser.parse(body.decode("utf-8", errors="replace").splitlines())
            except (httpx.HTTPError, ProviderError):
                parser = None  # no robots.txt we can read (missing, oversized, unreachable): nothing is disallowed
            self.robots[origin] = parser
        parser = self.robots[origin]
        return parser is None or parser.can_fetch(USER_AGENT, url)

    # --- fetching -------------------------------------------------------------------------------

    def fetch(self, urls: list[str], max_characters: int) -> FetchAttempt:
        pages, raw = [], []
        for url in urls:
            page, record = self._fetch_one(url, max_characters)
            pages.append(page)
            raw.append(record)
        return FetchAttempt(self.name, "http_get", {"urls": urls, "max_characters": max_characters}, pages,
                            raw={"responses": raw})

    def _fetch_one(self, url: str, max_characters: int) -> tuple[PageCapture, dict[str, Any]]:
        record: dict[str, Any] = {"url": url}
        try:
            if not self._allowed_by_robots(url):
                raise ProviderError("robots_disallowed", "direct: robots.txt disallows this URL")
            response, body, final = self._get(url)
        except ProviderError as exc:
            record.update(error=exc.message, error_kind=exc.kind)
            return PageCapture(url, extraction_status="provider_error", content_kind="unknown",
                               error=exc.message, error_kind=exc.kind), record
        content_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        binary = looks_binary(body)
        record.update(final_url=final, http_status=response.status_code, content_type=content_type,
                      body=None if binary else decode_body(body, response.charset_encoding))
        if binary and (content_type.startswith("text/") or content_type in ("application/xhtml+xml", "")):
            message = f"direct: the body is binary, not {content_type or 'text'}"
            return PageCapture(url, final, extraction_status="provider_error", content_kind="unknown", error=message,
                               error_kind="unsupported_content", http_status=response.status_code), record
        meta: dict[str, Any] = {}
        truncated = False
        if content_type in ("text/html", "application/xhtml+xml", ""):
            extracted = extract_html(record["body"], response.status_code, url=final)
            title, page_text, status = extracted.title, extracted.text, extracted.status
            meta, truncated = extracted.metadata(), extracted.truncated
        elif content_type.startswith("text/"):
            title, page_text = None, record["body"].strip()
            status = "not_found" if response.status_code in (404, 410) else "extracted" if page_text else "no_extract"
        else:
            message = f"direct: unsupported content type {content_type}"
            return PageCapture(url, final, extraction_status="provider_error", content_kind="unknown", error=message,
                               error_kind="unsupported_content", http_status=response.status_code), record
        if response.status_code >= 400 and status == "extracted":
            status = "not_found" if response.status_code in (404, 410) else "provider_error"
        return PageCapture(url, final, title, page_text[:max_characters], status, "page_text",
                           truncated or len(page_text) > max_characters, http_status=response.status_code,
                           **meta), record

    def _get(self, url: str) -> tuple[httpx.Response, bytes, str]:
        deadline = time.monotonic() + self.settings.timeout_seconds
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            self._wait_turn(current)
            try:
                with self.client.stream("GET", current) as response:
                    if response.is_redirect:
                        location = response.headers.get("location", "")
                        target = urljoin(current, location)
                        if not same_site(url, target):
                            raise ProviderError("cross_site_redirect",
                                                "direct: refused a redirect to another site")
                        current = target
                        continue
                    body = read_capped(response, "direct", self.settings.max_bytes, what="page", deadline=deadline)
                    return response, body, current
            except httpx.TimeoutException:
                raise ProviderError("timeout", "direct: request timed out", retryable=True) from None
            except httpx.ConnectError as exc:
                if isinstance(exc.__cause__, BlockedAddress):
                    raise ProviderError(
                        "private_address", "direct: the host resolves to a private, loopback or link-local address "
                        "(to allow it: 'bookmark-research config set direct.allow_private_networks true' in a "
                        "terminal)") from None
                raise ProviderError("connection_error", "direct: cannot connect", retryable=True) from None
            except httpx.HTTPError as exc:
                raise ProviderError("connection_error", f"direct: request failed ({type(exc).__name__})",
                                    retryable=True) from None
        raise ProviderError("too_many_redirects", "direct: too many redirects")
