"""What every provider returns, and how failures are classified (never "no results" for a failure)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from bookmark_research.clock import iso
from bookmark_research.config.settings import Settings, credential
from bookmark_research.evidence.archive import PageCapture

USER_AGENT = "bookmark-research/0.1 (+https://github.com/bookmark-research; local evidence fetcher)"


class ProviderError(Exception):
    """A classified provider failure. ``message`` is generic: no upstream body, URL query or secret."""

    def __init__(self, kind: str, message: str, *, retryable: bool = False, http_status: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.retryable = kind, message, retryable
        self.http_status, self.retry_after = http_status, retry_after

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": self.message, "error_kind": self.kind, "retryable": self.retryable}
        if self.http_status is not None:
            out["http_status"] = self.http_status
        if self.retry_after is not None:
            out["retry_after_seconds"] = self.retry_after
        return out


_USABLE_KEY = re.compile(r"[\x21-\x7e]+")


def api_key(env: str, provider: str, settings: Settings) -> str | None:
    """A provider's key (environment, else settings file), checked before any client is built.

    A key that cannot travel in an HTTP header (non-ASCII, spaces, control characters) is a
    classified failure naming the setting, never an encoding error that might quote part of it.
    """
    key = credential(env, settings)
    if key is None:
        return None
    key = key.strip()
    if not _USABLE_KEY.fullmatch(key):
        raise ProviderError("invalid_credential",
                            f"{provider}: {env} is not usable (API keys are printable ASCII without spaces)")
    return key


def classify_http(provider: str, status: int, retry_after: str | None = None) -> ProviderError:
    """Map an HTTP status to an error kind; the message names the provider and status only."""
    seconds = None
    if retry_after:
        try:
            seconds = max(0.0, min(float(retry_after), 86_400.0))
        except ValueError:
            seconds = None
    message = f"{provider} HTTP {status}"
    if status == 401:
        return ProviderError("authentication_required", message, http_status=status)
    if status in (403, 451):
        return ProviderError("access_denied", message, http_status=status)
    if status == 402:
        return ProviderError("quota_exhausted", message, http_status=status)
    if status == 404:
        return ProviderError("not_found", message, http_status=status)
    if status == 429:
        return ProviderError("rate_limited", message, retryable=True, http_status=status, retry_after=seconds)
    if status in (408, 500, 502, 503, 504):
        return ProviderError("transient_http", message, retryable=True, http_status=status, retry_after=seconds)
    return ProviderError("http_error", message, http_status=status)


@dataclass
class FetchAttempt:
    """One provider's answer for a list of URLs: the raw response to archive and a page per URL."""

    provider: str
    tool: str
    request: dict[str, Any]
    pages: list[PageCapture]
    raw: Any = None
    raw_name: str = "response.json"
    retrieved_at: str = field(default_factory=iso)
    error: ProviderError | None = None  # the whole attempt failed (no response)


class Fetcher(Protocol):
    """What the fetch waterfall needs from a provider."""

    name: str

    def fetch(self, urls: list[str], max_characters: int) -> FetchAttempt: ...

    def close(self) -> None: ...


class RedactSecrets(logging.Filter):
    """Masks credentials in log records of the HTTP libraries (their INFO lines print request URLs,
    and OpenAlex takes its key as a query parameter)."""

    PATTERN = re.compile(r"((?:api_key|apikey|key|token|access_token)=)[^&\s\"']+|(Bearer )\S+", re.I)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = self.PATTERN.sub(lambda m: (m.group(1) or m.group(2)) + "***", message)
        if masked != message:
            record.msg, record.args = masked, ()
        return True


for _name in ("httpx", "httpcore", "httpx2", "mcp"):
    logging.getLogger(_name).addFilter(RedactSecrets())
