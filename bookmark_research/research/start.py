"""``research_start``: validate everything, freeze the inventory, then publish the session folder at once.

Nothing is written before every check has passed (a refused start leaves no folder); the start itself
makes no network request and never writes settings. Indexed sources are refreshed first (a live source
must be settled); re-syncing them later never changes this session's scope.
"""

from __future__ import annotations

from typing import Any

from bookmark_research.clock import iso
from bookmark_research.config.settings import load as load_settings
from bookmark_research.core.app import App
from bookmark_research.errors import InvalidInputError
from bookmark_research.research import inventory, jsonfile, store
from bookmark_research.research.ids import new_research_id, sha256_text
from bookmark_research.research.operations import plan_budget

SEARCHERS = ("exa", "parallel", "tavily", "jina")
SETTLED = ("current", "snapshot")
BOUNDARY = ("Frozen research input; never automatically sent to web providers. Notes, tags, the scope text and "
            "source ids stay on this machine; only the queries and URLs an agent passes to research_search and "
            "research_fetch leave it.")


def _clean(value: str | None, field: str, limit: int, required: bool) -> str:
    text = (value or "").strip()
    if required and not text:
        raise InvalidInputError(f"{field} must not be blank")
    if len(text) > limit or "\x00" in text:
        raise InvalidInputError(f"{field} must be at most {limit:,} characters of text")
    return text


def _providers(explicit: list[str] | None) -> dict[str, list[str]]:
    settings = load_settings()
    if explicit:
        return {"providers": [p for p in explicit if p in SEARCHERS], "search_fallback_providers": [],
                "fetch_providers": list(explicit), "scholarly_providers": list(settings.scholarly.providers)}
    primary = list(settings.search.providers)
    return {"providers": primary,
            "search_fallback_providers": [p for p in settings.search.fallback_providers if p not in primary],
            "fetch_providers": list(dict.fromkeys(settings.fetch.providers)),
            "scholarly_providers": list(settings.scholarly.providers)}


def _indexed(app: App, source_ids: list[str], refs: list[dict[str, str]]) -> tuple[dict[str, Any],
                                                                                   list[tuple[str, str, str]]]:
    from bookmark_research.index.db import read_snapshot
    from bookmark_research.index.status import require_source
    from bookmark_research.sources.live import refresh

    conn = app.connect(create=False)
    if conn is None:
        raise InvalidInputError("Sync the bookmark package before selecting source_ids or bookmark_refs")
    for sid in source_ids:
        require_source(conn, sid)
        mode = conn.execute("SELECT mode FROM sources WHERE source_id=?", (sid,)).fetchone()[0]
        state = refresh(app, sid, force=True)["state"] if mode == "live" else \
            conn.execute("SELECT state FROM sources WHERE source_id=?", (sid,)).fetchone()[0]
        if state not in SETTLED:
            raise InvalidInputError(f"Source {sid} is {state}; wait for a settled input before starting research")
    with read_snapshot(conn):
        resolved = [inventory.resolve_bookmark_ref(conn, r) for r in refs]
        manifest = inventory.from_index(conn, source_ids)
    return manifest, resolved


def start(app: App, p: Any) -> tuple[store.Session, dict[str, Any]]:
    """Create a session from a validated ``ResearchStartInput``; returns it and its output placement."""
    brief = _clean(p.brief, "brief", 12_000, True)
    scope_text = _clean(p.scope, "scope", 12_000, False)
    questions = []
    for i, q in enumerate(p.questions):
        questions.append({"id": q.id, "question": _clean(q.question, f"questions[{i}].question", 4000, True),
                          "status": "open", "answer": None, "claim_ids": [], "gap": None})
    if len({q["id"] for q in questions}) != len(questions):
        raise InvalidInputError("Question ids must be unique")
    refs = [r.model_dump() for r in (p.bookmark_refs or [])]
    if p.urls is not None and (p.source_ids or refs):
        raise InvalidInputError("Choose urls or indexed source_ids/bookmark_refs as the original input")
    if p.urls is not None:
        for i, url in enumerate(p.urls):
            if not url.strip() or "\x00" in url:
                raise InvalidInputError(f"urls[{i}]: must be a non-blank URL")
    mode = p.scope_mode or "whole"
    if p.inventory_ids is not None and p.scope_mode != "subset":
        raise InvalidInputError("inventory_ids selection requires explicit scope_mode=subset")
    if mode == "subset":
        if p.inventory_ids is not None and refs:
            raise InvalidInputError("Choose inventory_ids or bookmark_refs for an explicit subset, not both")
        if not p.inventory_ids and not refs:
            raise InvalidInputError("An explicit subset needs existing inventory_ids or bookmark_refs")
    if p.inventory_ids is not None and len(set(p.inventory_ids)) != len(p.inventory_ids):
        raise InvalidInputError("inventory_ids must be unique")
    if p.providers is not None and len(set(p.providers)) != len(p.providers):
        raise InvalidInputError("providers must not repeat a provider")
    root, placement = store.session_root(app, p.output_directory)
    source_ids = sorted(set(p.source_ids or []) | {r["source_id"] for r in refs})

    resolved: list[tuple[str, str, str]] = []
    if p.urls is not None:
        manifest = inventory.from_urls(p.urls)
    elif source_ids:
        manifest, resolved = _indexed(app, source_ids, refs)
    else:
        manifest = inventory.empty()
        mode = "questions" if mode == "whole" else mode
    if not manifest["entries"] and mode == "subset":
        raise InvalidInputError("An explicit subset needs existing inventory_ids or bookmark_refs")
    scope = inventory.select(manifest, mode, p.inventory_ids, resolved, refs)
    providers = _providers(p.providers)
    budget, plan = plan_budget(p.budget.model_dump(exclude_unset=True) if p.budget else None,
                               scope["selected_url_count"], providers["fetch_providers"][0])

    research_id = new_research_id()
    now = iso()
    inventory_text = jsonfile.dumps(manifest)
    context = {"schema_version": 1, "captured_at": now, "kind": "local_bookmark_metadata",
               "bookmarks": inventory.context_bookmarks(manifest, scope["selected_inventory_ids"]),
               "source_scope": scope, "boundary": BOUNDARY}
    context_text = jsonfile.dumps(context)
    state = {
        "schema_version": store.SCHEMA_VERSION, "research_id": research_id, "status": "active", "brief": brief,
        "scope": scope_text, "source_ids": source_ids, **providers, "source_scope": scope,
        "inventory_manifest_sha256": sha256_text(inventory_text), "context_manifest_sha256": sha256_text(context_text),
        "inventory_reviews": [], "external_runs": [], "created_at": now, "updated_at": now, "budget": budget,
        "initial_fetch_plan": plan, "usage": {"search_calls": 0, "fetch_calls": 0, "rounds": 0},
        "questions": questions, "claims": [], "conflicts": [], "sources": [], "operations": [], "events": [],
        "output": {"placement": placement, "fallback_reason": None},
    }
    directory = store.create(root, research_id, {"inventory.json": inventory_text, "context.json": context_text,
                                                  "state.json": jsonfile.dumps(state)})
    store.register(app, research_id, directory, placement)
    store.remember_frozen(state["inventory_manifest_sha256"], manifest, state["context_manifest_sha256"], context)  # found again even if output.directory changes
    session = store.Session(app, directory, state, False)
    return session, {"placement": placement, "path": str(directory), "fallback_reason": None}
