"""``fetch_web``: read URLs through a provider waterfall and archive what was read.

An explicit provider gets exactly one attempt. Otherwise the first provider in ``fetch.providers``
gets every URL, then the remaining providers run concurrently, each only for URLs still without
usable text. Fallback is triggered by anything that is not extracted page text: transport and
authentication errors, per-URL errors, empty bodies, login walls, challenges, "not found" shells.
A later failure never erases text an earlier provider supplied; every URL says which provider
supplied its text.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bookmark_research.config.settings import Settings, load
from bookmark_research.core.app import App
from bookmark_research.errors import InvalidInputError
from bookmark_research.evidence.archive import PageCapture, save
from bookmark_research.providers.base import FetchAttempt, Fetcher, ProviderError
from bookmark_research.providers.urls import check_url

USABLE = "extracted"


def make_fetcher(name: str, settings: Settings) -> Fetcher:
    """The fetcher for ``name``; unimplemented providers raise a classified error (no network)."""
    if name == "direct":
        from bookmark_research.providers.direct import DirectFetcher

        return DirectFetcher(settings.direct)
    if name == "jina":
        from bookmark_research.providers.jina import JinaReader

        return JinaReader(settings)
    if name in ("exa", "parallel", "tavily"):
        from bookmark_research.providers.remote_mcp import RemoteMCP

        return RemoteMCP(name, settings)
    raise ProviderError("unsupported_provider", f"{name}: unknown fetch provider")


def _attempt(name: str, urls: list[str], max_characters: int, settings: Settings) -> FetchAttempt:
    fetcher: Fetcher | None = None
    try:
        fetcher = make_fetcher(name, settings)  # building the client is inside the classified path too
        return fetcher.fetch(urls, max_characters)
    except ProviderError as exc:
        return FetchAttempt(name, "none" if fetcher is None else "unknown", {"urls": urls}, [], error=exc)
    except Exception as exc:  # a provider bug must not take the others down; no message text (may hold secrets)
        return FetchAttempt(name, "unknown", {"urls": urls}, [],
                            error=ProviderError("provider_error", f"{name}: provider failed ({type(exc).__name__})"))
    finally:
        if fetcher is not None:
            fetcher.close()


def _page_view(page: PageCapture, provider: str, saved: dict[str, Any] | None) -> dict[str, Any]:
    view = {"url": page.requested_url, "provider": provider,
            "status": "ok" if page.extraction_status == USABLE and page.text else "error"
            if page.error_kind else "unverified",
            "returned_url": page.returned_url, "title": page.title, "extraction_status": page.extraction_status,
            "content_kind": page.content_kind, "characters": len(page.text), "possibly_truncated": page.possibly_truncated,
            "http_status": page.http_status, "error": page.error, "error_kind": page.error_kind, "text": page.text,
            "author": page.author, "published_at": page.published_at, "site_name": page.site_name,
            "language": page.language, "capture_id": None, "sha256": None, "body_path": None}
    if saved is not None:
        view["capture_id"] = saved["capture_id"]
        match = next((p for p in saved["pages"] if p["requested_url"] == page.requested_url), None)
        if match:
            view.update(sha256=match["sha256"], body_path=match["body_path"])
    return view


def _rank(view: dict[str, Any]) -> tuple[int, int]:
    return (view["status"] == "ok", view["characters"] > 0)


def fetch_web(app: App, urls: list[str], provider: str | None = None, max_characters: int | None = None,
              archive: bool | None = None, raw: bool = False) -> dict[str, Any]:
    settings = load()
    urls = list(dict.fromkeys(check_url(u, f"urls[{i}]") for i, u in enumerate(urls)))
    if provider is not None and provider not in ("exa", "parallel", "tavily", "jina", "direct"):
        raise InvalidInputError(f"provider: unknown provider {provider!r}; known: exa, parallel, tavily, jina, direct")
    order = [provider] if provider else list(settings.fetch.providers)
    limit = max_characters or settings.fetch.max_characters
    keep = settings.archive.enabled if archive is None else archive
    best: dict[str, dict[str, Any]] = {}
    attempts: list[dict[str, Any]] = []
    reasons: dict[str, list[str]] = {u: [] for u in urls}  # every provider's reason a URL was not read

    def why(provider: str, message: str) -> str:
        return message if message.startswith(provider) else f"{provider}: {message}"

    def record(attempt: FetchAttempt) -> None:
        saved = None
        entry: dict[str, Any] = {"provider": attempt.provider, "urls": attempt.request.get("urls", []),
                                 "retrieved_at": attempt.retrieved_at, "capture_id": None}
        if attempt.error is not None:
            entry.update(status="error", **attempt.error.to_dict())
            for url in entry["urls"]:
                reasons.setdefault(url, []).append(why(attempt.provider, attempt.error.message))
        else:
            if keep and attempt.pages:
                saved = save(app, provider=attempt.provider, tool=attempt.tool, request=attempt.request,
                             response=attempt.raw, pages=attempt.pages, retrieved_at=attempt.retrieved_at)
                entry["capture_id"] = saved["capture_id"]
            views = [_page_view(p, attempt.provider, saved) for p in attempt.pages]
            ok = sum(v["status"] == "ok" for v in views)
            entry["status"] = "ok" if ok == len(views) else "partial" if ok else "error"
            for view in views:
                if view["status"] != "ok":
                    message = view["error"] or view["extraction_status"].replace("_", " ")
                    reasons.setdefault(view["url"], []).append(why(attempt.provider, message))
                if view["url"] not in best or _rank(view) > _rank(best[view["url"]]):
                    best[view["url"]] = view  # a later failure never replaces usable text
        if raw and attempt.raw is not None:
            entry["raw"] = attempt.raw
        attempts.append(entry)

    record(_attempt(order[0], urls, limit, settings))
    rest = order[1:]
    pending = [u for u in urls if best.get(u, {}).get("status") != "ok"]
    if pending and rest:
        with ThreadPoolExecutor(max_workers=len(rest)) as pool:
            results = list(pool.map(lambda name: _attempt(name, pending, limit, settings), rest))
        for attempt in results:  # archived and merged in settings order, whatever finished first
            record(attempt)
    for url in urls:
        if url not in best:
            failure = next((a for a in reversed(attempts) if a["status"] == "error" and "error" in a), None)
            best[url] = {"url": url, "provider": None, "status": "error", "returned_url": None, "title": None,
                         "extraction_status": "request_failed", "content_kind": "unknown", "characters": 0,
                         "possibly_truncated": False, "http_status": None, "text": "",
                         "error": failure["error"] if failure else "no provider answered",
                         "error_kind": failure["error_kind"] if failure else "no_response",
                         "capture_id": None, "sha256": None, "body_path": None}
    pages = [best[u] for u in urls]
    for page in pages:
        page["reasons"] = [] if page["status"] == "ok" else list(dict.fromkeys(reasons.get(page["url"], [])))
    ok = sum(p["status"] == "ok" for p in pages)
    return {"mode": "single" if provider else "waterfall", "providers": order, "urls": urls,
            "status": "ok" if ok == len(urls) else "partial" if ok else "error",
            "successful_url_count": ok, "unresolved_urls": [p["url"] for p in pages if p["status"] != "ok"],
            "archive_enabled": keep, "pages": pages, "attempts": attempts}


def attempt(name: str, urls: list[str], max_characters: int, settings: Settings) -> FetchAttempt:
    """One provider's attempt at ``urls``; provider failures come back in ``error``, never raised.

    The unit a research session budgets: it reserves each attempt before calling this.
    """
    return _attempt(name, urls, max_characters, settings)
