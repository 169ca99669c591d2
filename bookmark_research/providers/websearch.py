"""``search_web``: queries through primary providers concurrently, fallbacks for what stayed unresolved,
results fused per target by reciprocal rank fusion over canonical URLs.

Every (provider, target, query) is attempted once and recorded as a batch with its status and a
classified error. A provider's failure is reported as a failure, never as "no results".
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bookmark_research.config.settings import Settings, credential, load
from bookmark_research.errors import InvalidInputError
from bookmark_research.clock import iso
from bookmark_research.providers.base import ProviderError
from bookmark_research.providers.urls import canonical_url

RRF_K = 60
SNIPPET_LIMIT = 1200
KNOWN = ("exa", "parallel", "tavily", "jina")
REQUIRED = {"jina": "JINA_API_KEY"}

_cooldowns: dict[str, tuple[float, ProviderError]] = {}
_cooldown_lock = threading.Lock()


def make_searcher(name: str, settings: Settings) -> Any:
    if name == "jina":
        from bookmark_research.providers.jina import JinaSearch

        return JinaSearch(settings)
    if name in ("exa", "parallel", "tavily"):
        from bookmark_research.providers.remote_mcp import RemoteMCP

        return RemoteMCP(name, settings)
    raise ProviderError("unsupported_provider", f"{name}: unknown search provider")


def _cooling(provider: str) -> ProviderError | None:
    with _cooldown_lock:
        until, error = _cooldowns.get(provider, (0.0, None))
    return error if error is not None and time.monotonic() < until else None


def _cool(provider: str, error: ProviderError) -> None:
    if error.kind == "rate_limited":
        seconds = error.retry_after if error.retry_after is not None else 5.0
    elif error.kind == "quota_exhausted":
        seconds = error.retry_after if error.retry_after is not None else 300.0
    else:
        return
    with _cooldown_lock:
        _cooldowns[provider] = (time.monotonic() + seconds, error)


def _run_provider(name: str, queries: list[tuple[str, str]], limit: int, settings: Settings) -> list[dict[str, Any]]:
    """All queries of one provider, in order; one attempt each."""
    batches: list[dict[str, Any]] = []
    searcher = None
    setup_error: ProviderError | None = None
    try:
        searcher = make_searcher(name, settings)
    except ProviderError as exc:
        setup_error = exc
    except Exception as exc:  # building a client failed; no message text (it might quote a key)
        setup_error = ProviderError("provider_error", f"{name}: provider failed ({type(exc).__name__})")
    try:
        for target, query in queries:
            batch: dict[str, Any] = {"provider": name, "target": target, "query": query, "retrieved_at": iso(),
                                     "results": []}
            error = setup_error or _cooling(name)
            if error is not None and setup_error is None:
                batch["skipped_due_to_cooldown"] = True
            if error is None:
                try:
                    rows = searcher.search(query, limit)  # type: ignore[union-attr]
                    results = []
                    for row in rows:
                        url = row.get("url")
                        if isinstance(url, str) and canonical_url(url):
                            results.append({"url": url, "title": row.get("title") or url,
                                            "snippet": (row.get("snippet") or "")[:SNIPPET_LIMIT],
                                            "rank": len(results) + 1})
                    if rows and not results:
                        raise ProviderError("result_format", f"{name}: results carried no valid URLs")
                    batch.update(status="ok", results=results, result_state="nonempty" if results else "empty")
                except ProviderError as exc:
                    error = exc
                    _cool(name, exc)
                except Exception as exc:  # never relay text that might hold secrets
                    error = ProviderError("provider_error", f"{name}: provider failed ({type(exc).__name__})")
            if error is not None:
                batch.update(status="error", result_state="failed", **error.to_dict())
            batches.append(batch)
    finally:
        if searcher is not None:
            searcher.close()
    return batches


def run_plan(plan: list[tuple[str, list[tuple[str, str]]]], limit: int, settings: Settings) -> list[dict[str, Any]]:
    """Run each ``(provider, [(target, query), ...])`` of ``plan`` concurrently, every pair once; the batches
    in plan order. Research sessions call this per stage, after reserving the stage's budget."""
    if not plan:
        return []
    with ThreadPoolExecutor(max_workers=len(plan)) as pool:
        results = list(pool.map(lambda job: _run_provider(job[0], job[1], limit, settings), plan))
    return [b for batches in results for b in batches]  # deterministic: plan order, then query order


def _stage(providers: list[str], queries: list[tuple[str, str]], limit: int, settings: Settings) -> list[dict[str, Any]]:
    if not providers or not queries:
        return []
    return run_plan([(p, queries) for p in providers], limit, settings)


def fuse(target: str, batches: list[dict[str, Any]], limit: int) -> dict[str, Any]:
    """Reciprocal rank fusion (k = 60) of one target's batches over canonical URLs."""
    hits: dict[str, dict[str, Any]] = {}
    seen: set[tuple[str, str, str]] = set()
    providers_ok = sorted({b["provider"] for b in batches if b["status"] == "ok"})
    for batch in batches:
        if batch["status"] != "ok":
            continue
        for row in batch["results"]:
            key = canonical_url(row["url"])
            if key is None:
                continue
            unit = (batch["provider"], batch["query"], key)
            hit = hits.setdefault(key, {"url": row["url"], "canonical_url": key, "raw_urls": [], "title": row["title"],
                                        "rrf_score": 0.0, "sources": []})
            if row["url"] not in hit["raw_urls"]:
                hit["raw_urls"].append(row["url"])
            if unit in seen:  # repeated batches or URLs add no score and no evidence
                continue
            seen.add(unit)
            hit["rrf_score"] += 1.0 / (RRF_K + row["rank"])
            hit["sources"].append({"provider": batch["provider"], "query": batch["query"], "rank": row["rank"],
                                   "url": row["url"], "title": row["title"], "snippet": row["snippet"]})
    ranked = sorted(hits.values(), key=lambda h: (-h["rrf_score"], h["canonical_url"]))
    for hit in ranked:
        hit["rrf_score"] = round(hit["rrf_score"], 6)
        hit["provider_count"] = len({s["provider"] for s in hit["sources"]})
        hit["evidence_count"] = len(hit["sources"])
    ok = [b for b in batches if b["status"] == "ok"]
    status = ("missing" if not batches else "error" if not ok else
              "partial" if len(ok) < len(batches) else "ok" if ranked else "empty")
    return {"target": target, "status": status, "providers": providers_ok, "result_count": len(ranked),
            "results": ranked[:limit]}


def search_web(targets: list[dict[str, str]], providers: list[str] | None = None,
               limit_per_target: int | None = None) -> dict[str, Any]:
    settings = load()
    pairs = list(dict.fromkeys((t["target"].strip(), t["query"].strip()) for t in targets))
    if providers:
        unknown = [p for p in providers if p not in KNOWN]
        if unknown:
            raise InvalidInputError(f"providers: unknown {', '.join(unknown)}; known: {', '.join(KNOWN)}")
        primary, fallback = list(dict.fromkeys(providers)), []
    else:
        primary = list(settings.search.providers)
        fallback = [p for p in settings.search.fallback_providers if p not in primary]
    limit = limit_per_target or settings.search.limit_per_target
    batches = _stage(primary, pairs, limit, settings)
    resolved = {(b["target"], b["query"]) for b in batches if b["status"] == "ok" and b["results"]}
    unresolved = [q for q in pairs if q not in resolved]
    usable_fallback, skipped = usable_providers(fallback, settings)
    fallback_batches = _stage(usable_fallback, unresolved, limit, settings) if unresolved else []
    routing = {"mode": "parallel_then_fallback" if fallback else "parallel", "primary_providers": primary,
               "fallback_providers": fallback, "fallback_triggered": bool(fallback_batches),
               "skipped_providers": skipped}
    return summarize(pairs, batches + fallback_batches, routing, limit)


def usable_providers(names: list[str], settings: Settings) -> tuple[list[str], list[dict[str, Any]]]:
    """The providers whose required credential is configured, and the skipped ones with what they miss."""
    usable, skipped = [], []
    for name in names:
        missing = [env for env in [REQUIRED.get(name)] if env and not credential(env, settings)]
        if missing:
            skipped.append({"provider": name, "reason": "authentication_required", "missing": missing})
        else:
            usable.append(name)
    return usable, skipped


def summarize(pairs: list[tuple[str, str]], batches: list[dict[str, Any]], routing: dict[str, Any],
              limit: int) -> dict[str, Any]:
    """The ``search_web`` result for ``pairs`` from the batches every stage produced."""
    by_target: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for batch in batches:
        by_target[batch["target"]].append(batch)
    targets_out = [fuse(t, by_target.get(t, []), limit) for t in dict.fromkeys(t for t, _ in pairs)]
    still = {(b["target"], b["query"]) for b in batches if b["status"] == "ok" and b["results"]}
    ok_providers = sorted({b["provider"] for b in batches if b["status"] == "ok"})
    return {
        "targets": targets_out,
        "batches": batches,
        "routing": routing,
        "unresolved_queries": [{"target": t, "query": q} for t, q in pairs if (t, q) not in still],
        "successful_provider_count": len(ok_providers),
        "providers": ok_providers,
        "limit_per_target": limit,
        "ranking": {"method": "rrf", "k": RRF_K, "evidence_unit": "provider+query+canonical_url",
                    "independent_fact_confirmation": False},
        "errors": [{"target": b["target"], "provider": b["provider"], "query": b["query"],
                    "kind": b["error_kind"], "error": b["error"]} for b in batches if b["status"] == "error"],
    }
