"""URL checks and the canonical form used to merge results and to match bookmarks with archived pages."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from bookmark_research.errors import InvalidInputError

_DEFAULT_PORTS = {"http": 80, "https": 443}
_REFUSED = re.compile(r"[\s\x00-\x1f\\]")  # whitespace (any Unicode space), control characters, backslash


def check_url(url: str, field: str = "url") -> str:
    """An absolute http(s) URL with a host, no credentials, no whitespace, control characters or backslashes."""
    if not isinstance(url, str) or not url or len(url) > 8192:
        raise InvalidInputError(f"{field}: must be an http(s) URL of at most 8192 characters")
    if _REFUSED.search(url):
        raise InvalidInputError(f"{field}: {url[:80]!r} contains whitespace, control characters or a backslash")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises on an invalid port)
    except ValueError:
        raise InvalidInputError(f"{field}: {url[:80]!r} is not a valid URL") from None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        raise InvalidInputError(f"{field}: {url[:80]!r} must be an absolute http(s) URL")
    if parts.username is not None or parts.password is not None:
        raise InvalidInputError(f"{field}: URLs with embedded credentials are refused")
    return url


def canonical_url(url: str) -> str | None:
    """Canonical form, or ``None`` for anything that is not a plain http(s) URL.

    Lower-cases scheme and host (IDNA-checked), drops the default port and ordinary fragments (keeps
    hash-router fragments starting with ``/`` or ``!``), turns an empty path into ``/`` and keeps the
    query exactly as given (no reordering, tracking parameters kept, an explicit empty ``?`` kept).
    """
    try:
        check_url(url)
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            netloc_host = f"[{host.lower()}]"
        else:
            netloc_host = host.encode("idna").decode("ascii").lower()
        port = parts.port
    except (InvalidInputError, UnicodeError, ValueError):
        return None
    scheme = parts.scheme.lower()
    netloc = netloc_host if port in (None, _DEFAULT_PORTS[scheme]) else f"{netloc_host}:{port}"
    fragment = parts.fragment if parts.fragment.startswith(("/", "!")) else ""
    query = parts.query
    rebuilt = urlunsplit((scheme, netloc, parts.path or "/", query, fragment))
    if not query and url.split("#", 1)[0].endswith("?"):
        rebuilt = rebuilt.split("#", 1)[0] + "?" + (f"#{fragment}" if fragment else "")
    return rebuilt
