"""``research_search`` and ``research_fetch``: the evidence layer's providers, budgeted per stage.

Both follow the reserve → request → commit protocol (``operations``). Only queries and URLs the agent
passes reach a provider; notes, tags, the scope text and source ids never do.

- **Web search** (``kind: web``): the session's search providers for every (question, query) pair, then its
  frozen fallback providers for pairs still without results, each fallback job reserved first and
  trimmed to the remaining budget. Snippets are never citable: a web search creates no sources.
- **Scholarly search** (``kind: scholarly``): ``literature_search``'s providers (routed per query as it
  does, limited to the session's scholarly providers, or the ones named); every record becomes a source
  (``evidence_kind: scholarly_record``) whose saved text is its title, authors, venue, year, DOI and
  abstract, so claims can quote an abstract. A record never counts as reading an original bookmark page.
- **Fetch**: URLs already read into the evidence archive are taken from there (no budget, no network;
  the source says ``archive_reuse``); the rest go to the first fetch provider, then the other providers
  concurrently for URLs still without text, each reserved before it is called. Every attempt that
  answered is saved under ``evidence/`` and each of its URLs becomes a source, failures included.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bookmark_research import atomic
from bookmark_research.clock import iso
from bookmark_research.config.settings import Settings, load
from bookmark_research.core.app import App
from bookmark_research.errors import BookmarkResearchError, InvalidInputError, NotFoundError
from bookmark_research.evidence.archive import PageCapture, save
from bookmark_research.providers.base import FetchAttempt
from bookmark_research.providers.urls import canonical_url, check_url
from bookmark_research.research import evidence, operations, store
from bookmark_research.research.ids import sha256_bytes
from bookmark_research.research.evidence import failure_reason
from bookmark_research.research.operations import Begun
from bookmark_research.research.store import Session

WEB = ("exa", "parallel", "tavily", "jina")
SCHOLARLY = ("openalex", "semantic_scholar", "crossref", "pubmed", "arxiv")
FETCH_NEXT = ("Read each source with research_source (terminal: research source ID SOURCE), record a source_review, "
              "then claims quoting the saved text (research_record; terminal: research record ID).")
SCHOLARLY_NEXT = ("Scholarly records are sources: read them with research_source (terminal: research source ID "
                  "SOURCE) and review them before quoting an abstract; fetch the paper's page to read more.")
SCHOLARLY_FAILED = ("No scholarly record was found. Retrying needs a new operation_id and budget (other providers or "
                    "another query); or record a gap.")
FETCH_FAILED = ("No page text was read. Retrying needs a new operation_id and budget; or import text the host read "
                "with research_import_evidence (terminal: research import ID --input FILE), record a blocked "
                "inventory_review, or a gap.")


def _questions(session: Session, ids: list[str]) -> None:
    known = {q["id"] for q in session.state["questions"]}
    for qid in ids:
        if qid not in known:
            raise NotFoundError(f"Unknown question: {qid}")


def _request(run: Any) -> tuple[dict[str, Any] | None, Exception | None]:
    """Run the request phase; an ordinary exception becomes a committed error, an interrupt propagates."""
    try:
        return run(), None
    except Exception as exc:  # noqa: BLE001 - committed as an error result (type only; see error_payload)
        return None, exc


# --- search ------------------------------------------------------------------------------------------------


def search(app: App, p: Any) -> dict[str, Any]:
    pairs = list(dict.fromkeys((q.question_id, q.query.strip()) for q in p.queries))
    session = store.open_session(app, p.research_id)
    names = list(dict.fromkeys(p.providers or []))
    if p.kind == "scholarly":
        return _scholarly(app, p, session, pairs, names)
    if any(n not in WEB for n in names):
        raise InvalidInputError("providers: scholarly providers need kind=scholarly")
    primary = names or list(session.state["providers"])
    fallback = [] if names else [f for f in session.state["search_fallback_providers"] if f not in primary]
    if not primary:
        raise InvalidInputError("This session has no web search provider; name providers or use kind=scholarly")
    parameters: dict[str, Any] = {"targets": [{"target": t, "query": q} for t, q in pairs], "providers": primary,
                                  "limit_per_target": p.limit_per_target}
    also = [dict(parameters)]
    if fallback:
        parameters["fallback_providers"] = fallback
    begun = operations.reserve(
        app, p.research_id, p.operation_id, "search", parameters,
        lambda s: {"search_calls": len(pairs) * len(primary), "rounds": 1},
        validate=lambda s: _questions(s, [t for t, _ in pairs]), also_accept=also if fallback else None)
    if begun.replay is not None:
        return begun.replay
    settings = load()

    def run() -> dict[str, Any]:
        from bookmark_research.providers.websearch import run_plan, summarize, usable_providers

        batches = run_plan([(name, pairs) for name in primary], p.limit_per_target, settings)
        resolved = {(b["target"], b["query"]) for b in batches if b["status"] == "ok" and b["results"]}
        unresolved = [pair for pair in pairs if pair not in resolved]
        usable, skipped = usable_providers(fallback, settings)
        jobs = [{"provider": name, "target": t, "query": q} for (t, q) in unresolved for name in usable]
        chosen = operations.extend(app, begun, [(job, {"search_calls": 1}) for job in jobs],
                                   "fallback_attempts") if jobs else []
        plan: dict[str, list[tuple[str, str]]] = {}
        for job in chosen:
            plan.setdefault(job["provider"], []).append((job["target"], job["query"]))
        extra = run_plan(list(plan.items()), p.limit_per_target, settings)
        routing = {"mode": "parallel_then_fallback" if fallback else "parallel", "primary_providers": primary,
                   "fallback_providers": fallback, "fallback_triggered": bool(extra), "skipped_providers": skipped}
        result = summarize(pairs, batches + extra, routing, p.limit_per_target)
        result["remaining_attempts"] = [{**job, "reason": "budget"} for job in jobs if job not in chosen]
        ok = [b for b in result["batches"] if b["status"] == "ok"]
        status = "error" if not ok else "partial" if len(ok) < len(result["batches"]) else "ok"
        calls = sum(1 for b in result["batches"] if not b.get("skipped_due_to_cooldown") and
                    b.get("error_kind") != "unsupported_provider")
        out = {"status": status, "result": result, "usage": {"tool_calls": calls}}
        if status == "error":
            reasons = sorted({e["error"] for e in result["errors"]}) or ["no provider answered"]
            out.update(error="no search provider succeeded: " + "; ".join(reasons),
                       error_kind=result["errors"][0]["kind"] if result["errors"] else "no_response")
        return out

    payload, exc = _request(run)
    if exc is not None:
        payload = operations.error_payload(exc)
    assert payload is not None
    return operations.commit(app, begun, lambda s, new: (payload, payload["status"]),
                             actual_usage=payload.get("usage"))


def _provider_reason(diagnostic: dict[str, Any]) -> str:
    """One provider's failure in a scholarly search, as a line naming it."""
    if diagnostic.get("missing"):
        return f"{diagnostic['provider']}: needs {', '.join(diagnostic['missing'])}"
    reason = diagnostic.get("error") or diagnostic.get("status") or "failed"
    return reason if reason.startswith(f"{diagnostic['provider']}:") else f"{diagnostic['provider']}: {reason}"


def _record_text(record: dict[str, Any]) -> str:
    lines = [record.get("title") or "(untitled)"]
    authors = "; ".join(a if isinstance(a, str) else str(a) for a in (record.get("authors") or [])[:20])
    if authors or record.get("year"):
        lines.append(f"{authors} ({record.get('year') or 'n.d.'})".strip())
    for label, key in (("Venue", "venue"), ("DOI", "doi"), ("URL", "url")):
        if record.get(key):
            lines.append(f"{label}: {record[key]}")
    if record.get("abstract"):
        lines += ["", record["abstract"]]
    return "\n".join(lines) + "\n"


def _scholarly(app: App, p: Any, session: Session, pairs: list[tuple[str, str]], names: list[str]) -> dict[str, Any]:
    from bookmark_research.providers.scholarly import REQUIRED, literature_search, route
    from bookmark_research.config.settings import credential

    if any(n not in SCHOLARLY for n in names):
        raise InvalidInputError("providers: kind=scholarly takes openalex, semantic_scholar, crossref, pubmed, arxiv")
    settings = load()
    allowed = names or session.state.get("scholarly_providers") or list(SCHOLARLY)
    plan = {}
    for pair in pairs:
        routed = names or [n for n in route(pair[1], "auto", None)[0] if n in allowed]
        plan[pair] = [n for n in routed if not (REQUIRED.get(n) and not credential(REQUIRED[n], settings))]
    parameters = {"kind": "scholarly", "targets": [{"target": t, "query": q} for t, q in pairs],
                  "providers": names or None, "limit_per_target": p.limit_per_target, "from_year": p.from_year,
                  "to_year": p.to_year}
    begun = operations.reserve(
        app, p.research_id, p.operation_id, "search", parameters,
        lambda s: {"search_calls": sum(len(v) for v in plan.values()), "rounds": 1},
        validate=lambda s: _questions(s, [t for t, _ in pairs]), extra={"search_kind": "scholarly"})
    if begun.replay is not None:
        return begun.replay
    captures: list[tuple[str, dict[str, Any], list[dict[str, Any]], dict[str, Any]]] = []

    def run() -> dict[str, Any]:
        targets = []
        for (target, query), providers in plan.items():
            if not providers:
                targets.append({"target": target, "query": query, "status": "error", "providers": [],
                                "error": "no scholarly provider is usable for this query (credentials?)",
                                "source_urls": []})
                continue
            result = literature_search(query, providers, "auto", p.limit_per_target, p.limit_per_target,
                                       p.from_year, p.to_year)
            records = result["records"][:p.limit_per_target]
            pages = []
            for rec in records:
                url = rec.get("url") or (f"https://doi.org/{rec['doi']}" if rec.get("doi") else
                                         f"scholarly:{rec['providers'][0]}:{rec.get('id')}")
                pages.append(PageCapture(url, url, rec.get("title"), _record_text(rec), "extracted",
                                         "scholarly_abstract" if rec.get("abstract") else "scholarly_metadata"))
            saved = save(app, provider="literature", tool="literature_search",
                         request={"query": query, "providers": providers}, response=result, pages=pages,
                         retrieved_at=records[0]["retrieved_at"] if records else iso(),
                         root=evidence_root(begun.directory), index=False) if pages else None
            captures.append((target, saved or {}, records, result))
            view = {"target": target, "query": query, "status": {"ok": "ok", "warning": "partial"}.get(
                result["status"], "error"), "providers": providers, "diagnostics": result["diagnostics"],
                "record_count": len(records)}
            failures = [d for d in result["diagnostics"]["providers"] if d["status"] != "ok"]
            if failures:
                view["errors"] = [{"provider": d["provider"], "error": _provider_reason(d),
                                   "error_kind": d.get("error_kind") or "provider_error"} for d in failures]
            if view["status"] == "error":
                view["error"] = "; ".join(e["error"] for e in view.get("errors", [])) or "no records"
            targets.append(view)
        statuses = [t["status"] for t in targets]
        status = "ok" if all(s == "ok" for s in statuses) else "error" if all(s == "error" for s in statuses) \
            else "partial"
        out = {"status": status, "result": {"kind": "scholarly", "targets": targets},
               "usage": {"tool_calls": sum(len(v) for v in plan.values())}}
        if status == "error":
            reasons = list(dict.fromkeys(t["error"] for t in targets))
            kinds = [e["error_kind"] for t in targets for e in t.get("errors", [])]
            out.update(error="no scholarly provider succeeded: " + "; ".join(reasons),
                       error_kind=kinds[0] if kinds else "no_usable_provider")
        return out

    payload, exc = _request(run)
    if exc is not None:
        payload = operations.error_payload(exc)
    assert payload is not None

    def sources(s: Session, first: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        links = evidence.links(s)
        for target, saved, records, _ in captures:
            for rec, page in zip(records, saved.get("pages", [])):
                capture = f"evidence/captures/{saved['capture_id']}"
                url = page["requested_url"]
                source = evidence.base_source(
                    target, p.operation_id, url, id=f"s{first + len(out)}", provider=rec["providers"][0],
                    providers=rec["providers"], retrieved_at=rec.get("retrieved_at"), title=rec.get("title"),
                    evidence_kind="scholarly_record", content_kind="scholarly_abstract" if rec.get("abstract")
                    else "scholarly_metadata", sha256=page["sha256"], characters=page["characters"],
                    body_file=f"evidence/pages/{page['sha256']}.txt", manifest_file=f"{capture}/manifest.json",
                    response_file=f"{capture}/response.json", doi=rec.get("doi"), venue=rec.get("venue"),
                    year=rec.get("year"), authors=rec.get("authors") or [], scholarly_ids=rec.get("ids") or {},
                    published_at=str(rec["year"]) if rec.get("year") else None, archive_reuse=None,
                    referenced_inventory_ids=links.for_url(url) if url.startswith("http") else [])
                out.append(source)
        return out

    def build(s: Session, new: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
        if exc is None:
            for target in payload["result"]["targets"]:
                target["source_ids"] = [src["id"] for src in new if src["question_id"] == target["target"]]
            payload["sources"] = new
            payload["next_action"] = SCHOLARLY_NEXT if new else SCHOLARLY_FAILED
        return payload, payload["status"]

    return operations.commit(app, begun, build, sources if exc is None else None, actual_usage=payload.get("usage"))


# --- fetch ---------------------------------------------------------------------------------------------------


def _archived(app: App, urls: list[str]) -> dict[str, dict[str, Any]]:
    """URLs with an extracted page in the evidence archive (newest capture, body hash verified)."""
    from bookmark_research.evidence.archive import archive_dir
    from bookmark_research.evidence.index import has_archive

    conn = app.connect(create=False)
    if conn is None or not has_archive(conn):
        return {}
    found: dict[str, dict[str, Any]] = {}
    root = archive_dir(app)
    for url in urls:
        key = canonical_url(url)
        row = conn.execute(
            "SELECT u.capture_id, u.provider, u.retrieved_at, u.title, u.returned_url, p.sha256 FROM archive_urls u "
            "JOIN archive_pages p ON p.id = u.page_id WHERE (u.canonical_url = ? OR u.requested_url = ?) AND "
            "u.extraction_status = 'extracted' ORDER BY u.retrieved_at DESC, u.capture_id DESC LIMIT 1",
            (key, url)).fetchone()
        if row is None:
            continue
        capture_id, provider, retrieved_at, title, returned, digest = row
        body = root / "pages" / f"{digest}.txt"
        capture = root / "captures" / capture_id
        try:
            if sha256_bytes(body.read_bytes()) != digest or not (capture / "manifest.json").is_file():
                continue
        except OSError:
            continue
        found[url] = {"capture_id": capture_id, "provider": provider, "retrieved_at": retrieved_at, "title": title,
                      "returned_url": returned, "sha256": digest, "body": body, "capture": capture}
    return found


def evidence_root(directory: Path) -> Path:
    """The session's ``evidence/`` folder, checked (no folder on the way a symbolic link) and laid out
    (``pages/`` and ``captures/`` 0700) just before a write."""
    store.check_folders(directory)
    for sub in ("pages", "captures"):
        store.make_dirs(directory / "evidence" / sub)
    return directory / "evidence"


def _copy_archived(directory: Path, entry: dict[str, Any]) -> None:
    """Copy an archived page and its capture files into the session's evidence folder."""
    pages = evidence_root(directory) / "pages"
    target = pages / f"{entry['sha256']}.txt"
    if not target.exists():
        atomic.write_bytes(target, entry["body"].read_bytes())
    capture = directory / "evidence" / "captures" / entry["capture_id"]
    if not capture.exists():
        store.make_dirs(capture.parent)
        staging = capture.parent / f".{entry['capture_id']}.copy"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(mode=0o700)
        for name in ("manifest.json", "response.json"):
            if (entry["capture"] / name).is_file():
                atomic.write_bytes(staging / name, (entry["capture"] / name).read_bytes())
        atomic.publish_dir(staging, capture)


def _save_attempt(app: App, directory: Path, attempt: FetchAttempt, settings: Settings) -> dict[str, Any]:
    saved = save(app, provider=attempt.provider, tool=attempt.tool, request=attempt.request, response=attempt.raw,
                 pages=attempt.pages, retrieved_at=attempt.retrieved_at, root=evidence_root(directory), index=False)
    if settings.archive.enabled:
        try:  # the shared archive too, so later sessions and search_archive find the page
            save(app, provider=attempt.provider, tool=attempt.tool, request=attempt.request, response=attempt.raw,
                 pages=attempt.pages, retrieved_at=attempt.retrieved_at)
        except BookmarkResearchError:
            pass  # the session's own copy is what the evidence rests on
    return saved


def _attempt_view(attempt: FetchAttempt, saved: dict[str, Any] | None, archive_error: str | None) -> dict[str, Any]:
    extracted = sum(pg.extraction_status == "extracted" and bool(pg.text) for pg in attempt.pages)
    view: dict[str, Any] = {"provider": attempt.provider, "urls": attempt.request.get("urls", []),
                            "retrieved_at": attempt.retrieved_at,
                            "status": "error" if attempt.error or archive_error or not extracted else
                            "ok" if extracted == len(attempt.pages) else "partial"}
    failed = next((pg for pg in attempt.pages if pg.error_kind), None)
    if attempt.error is not None:
        view.update(error=attempt.error.message, error_kind=attempt.error.kind, retryable=attempt.error.retryable)
    elif archive_error:
        view.update(error=archive_error, error_kind="archive_error", retryable=False)
    elif failed is not None and not extracted:
        view.update(error=failed.error, error_kind=failed.error_kind, retryable=failed.error_kind in (
            "rate_limited", "transient_http", "timeout", "connection_error"))
    elif not extracted:
        why = ", ".join(dict.fromkeys(failure_reason(pg.extraction_status, pg.http_status) for pg in attempt.pages))
        view.update(error=f"{attempt.provider}: no usable page text" + (f" ({why})" if why else ""),
                    error_kind="no_usable_text", retryable=False)
    return view


def _refuse_private_literals(urls: list[str], network: list[str]) -> None:
    """A URL whose host is a private, loopback or link-local address (or ``localhost``) that the direct
    fetcher's guard would refuse: refused here, before any budget is reserved (nothing would be sent)."""
    import ipaddress
    from urllib.parse import urlsplit

    from bookmark_research.providers.direct import BlockedAddress, check_address

    if load().direct.allow_private_networks:
        return
    for url in network:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
        try:
            if host == "localhost" or host.endswith(".localhost"):
                raise BlockedAddress(host)
            check_address(str(ipaddress.ip_address(host)), False)
        except ValueError:
            continue  # a name: resolved (and checked) when fetched
        except BlockedAddress:
            raise InvalidInputError(
                f"urls[{urls.index(url)}]: {url} is a private, loopback or link-local address, which the direct "
                "fetcher refuses (to allow it: 'bookmark-research config set direct.allow_private_networks true' "
                "in a terminal); nothing was reserved") from None


def fetch(app: App, p: Any) -> dict[str, Any]:
    from bookmark_research.evidence.fetch import attempt as provider_attempt

    urls = list(dict.fromkeys(check_url(u, f"urls[{i}]") for i, u in enumerate(p.urls)))
    session = store.open_session(app, p.research_id)
    order = [p.provider] if p.provider else list(session.state["fetch_providers"])
    parameters: dict[str, Any] = {"question_id": p.question_id, "urls": urls, "provider": order[0],
                                  "max_characters": p.max_characters, "reuse_archive": p.reuse_archive}
    also = [dict(parameters)]
    if len(order) > 1:
        parameters["fallback_providers"] = order[1:]
    reused = _archived(app, urls) if p.reuse_archive else {}
    network = [u for u in urls if u not in reused]
    if order[0] == "direct":
        _refuse_private_literals(urls, network)
    begun = operations.reserve(
        app, p.research_id, p.operation_id, "fetch", parameters,
        lambda s: {"fetch_calls": operations.fetch_cost(order[0], len(network))},
        validate=lambda s: _questions(s, [p.question_id]), also_accept=also if len(order) > 1 else None,
        extra={"archive_reused_urls": sorted(reused)})
    if begun.replay is not None:
        return begun.replay
    settings = load()
    attempts: list[tuple[FetchAttempt, dict[str, Any] | None, str | None]] = []
    outcome: dict[str, Any] = {"remaining_providers": []}

    def record(attempt: FetchAttempt) -> None:
        if attempt.error is not None or not attempt.pages:
            attempts.append((attempt, None, None))
            return
        try:
            attempts.append((attempt, _save_attempt(app, begun.directory, attempt, settings), None))
        except BookmarkResearchError as exc:
            attempts.append((attempt, None, exc.message))

    def resolved() -> set[str]:
        done = set(reused)
        for attempt, saved, _ in attempts:
            if saved is not None:
                done |= {pg.requested_url for pg in attempt.pages if pg.extraction_status == "extracted" and pg.text}
        return done

    def run() -> None:
        for entry in reused.values():
            _copy_archived(begun.directory, entry)
        if not network:
            return
        record(provider_attempt(order[0], network, p.max_characters, settings))
        pending = [u for u in network if u not in resolved()]
        rest = order[1:]
        if not pending or not rest:
            outcome["remaining_providers"] = rest if pending else []
            return
        options = [(name, {"fetch_calls": operations.fetch_cost(name, len(pending))}) for name in rest]
        chosen = operations.extend(app, begun, options, "fallback_attempts")
        if chosen:
            with ThreadPoolExecutor(max_workers=len(chosen)) as pool:
                results = list(pool.map(lambda n: provider_attempt(n, pending, p.max_characters, settings), chosen))
            for attempt in results:
                record(attempt)
        still = [u for u in pending if u not in resolved()]
        outcome["remaining_providers"] = [n for n in rest if n not in chosen] if still else []

    _, exc = _request(run)

    def sources(s: Session, first: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for url, entry in sorted(reused.items(), key=lambda kv: urls.index(kv[0])):
            capture = f"evidence/captures/{entry['capture_id']}"
            out.append(evidence.link(s, evidence.base_source(
                p.question_id, p.operation_id, url, id=f"s{first + len(out)}", provider=entry["provider"],
                retrieved_at=entry["retrieved_at"], title=entry["title"], returned_url=entry["returned_url"],
                sha256=entry["sha256"], characters=len(entry["body"].read_text(encoding="utf-8")),
                body_file=f"evidence/pages/{entry['sha256']}.txt", manifest_file=f"{capture}/manifest.json",
                response_file=f"{capture}/response.json", content_kind="page_text",
                archive_reuse={"capture_id": entry["capture_id"], "retrieved_at": entry["retrieved_at"],
                               "note": "Taken from the evidence archive; not fetched again"})))
        for attempt, saved, _ in attempts:
            if saved is None:
                continue
            capture = f"evidence/captures/{saved['capture_id']}"
            for page, info in zip(attempt.pages, saved["pages"]):
                text_ok = bool(info["sha256"])
                out.append(evidence.link(s, evidence.base_source(
                    p.question_id, p.operation_id, page.requested_url, id=f"s{first + len(out)}",
                    provider=attempt.provider, retrieved_at=attempt.retrieved_at, title=page.title,
                    returned_url=page.returned_url, extraction_status=page.extraction_status,
                    content_kind=page.content_kind, possibly_truncated=page.possibly_truncated,
                    sha256=info["sha256"], characters=info["characters"],
                    body_file=f"evidence/pages/{info['sha256']}.txt" if text_ok else None,
                    manifest_file=f"{capture}/manifest.json", response_file=f"{capture}/response.json",
                    http_status=page.http_status, error=page.error, error_kind=page.error_kind, archive_reuse=None,
                    published_at=getattr(page, "published_at", None), author=getattr(page, "author", None),
                    site_name=getattr(page, "site_name", None), language=getattr(page, "language", None))))
        return out

    def build(s: Session, new: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
        if exc is not None:
            payload = operations.error_payload(exc)
            return payload, "error"
        done = resolved()
        per_url = []
        for url in urls:
            ids = [src["id"] for src in new if src["url"] == url]
            ok = [src for src in new if src["url"] == url and src["extraction_status"] == "extracted"
                  and src["body_file"]]
            per_url.append({"url": url, "status": "ok" if url in done else "error",
                            "provider": ok[0]["provider"] if ok else None, "source_ids": ids,
                            "archive_reuse": url in reused})
        archive_errors = [{"provider": a.provider, "error": err} for a, _, err in attempts if err]
        status = "ok" if len(done & set(urls)) == len(urls) else "partial" if done & set(urls) else "error"
        payload: dict[str, Any] = {
            "status": status, "sources": new, "next_action": FETCH_NEXT if status != "error" else FETCH_FAILED,
            "usage": {"tool_calls": len(attempts), "archive_reuses": len(reused)}, "per_url": per_url,
            "unresolved_urls": [u for u in urls if u not in done], "remaining_providers": outcome["remaining_providers"],
            "attempts": [_attempt_view(a, saved, err) for a, saved, err in attempts]}
        if archive_errors:
            payload["archive_errors"] = archive_errors
            payload["provider_outcome"] = [{"provider": a.provider, "result": a.raw} for a, _, err in attempts if err]
        if status == "error":
            failure = next((a for a in payload["attempts"] if a.get("error")), None)
            payload.update(error=failure["error"] if failure else "no page text was read",
                           error_kind=failure["error_kind"] if failure else "no_usable_text")
        return payload, status

    return operations.commit(app, begun, build, sources if exc is None else None,
                             actual_usage={"tool_calls": len(attempts)})
