"""The read API other stages build on (the wiki, evaluation). Stable: names and fields are only added to.

Everything here reads a session the same way the research operations do: the location is resolved
(``NotFoundError`` / ``InvalidInputError`` for unknown or malformed ids), ``state.json`` is loaded (never
through a symlink), the frozen inventory is re-hashed and committed receipts are materialised in memory.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bookmark_research.core.app import App
from bookmark_research.errors import BookmarkResearchError, NotFoundError
from bookmark_research.research import bodies, citations, freshness, store

ARTIFACTS = ("body_file", "manifest_file", "response_file")


def session_directory(app: App, research_id: str) -> Path:
    """The session's folder (NotFoundError when unknown or gone, InvalidInputError for a malformed id)."""
    return store.locate(app, research_id)


def read_state(app: App, research_id: str) -> dict[str, Any]:
    """The verified state: inventory hash and scope checked, receipts materialised (a copy; never saved).

    As in the reference's state.json, ``inventory`` lists the selected entries in scope order
    (``id, original_url, retrieval_url, url_kind, instance_count``; the instances stay in inventory.json).
    """
    session = store.open_session(app, research_id)
    manifest = session.inventory()  # hash, then scope consistency against the frozen inventory
    state = copy.deepcopy(session.state)
    entries = {e["id"]: e for e in manifest["entries"]}
    state["inventory"] = [{"id": i, "original_url": entries[i]["original_url"],
                           "retrieval_url": entries[i]["retrieval_url"], "url_kind": entries[i]["url_kind"],
                           "instance_count": len(entries[i]["instances"])}
                          for i in state["source_scope"]["selected_inventory_ids"]]
    return state


def report_text(app: App, research_id: str) -> str:
    """The finished session's report.md ("" before the first finish); read inside the session folder."""
    session = store.open_session(app, research_id)
    relative = (session.state.get("artifacts") or {}).get("report")
    if not relative:
        return ""
    return store.read_regular(session.path(relative), "report.md").decode("utf-8")


def coverage(app: App, research_id: str) -> dict[str, Any]:
    """The session's coverage recomputed now, per-input ``rows`` included (as ``research_coverage`` sees it)."""
    from bookmark_research.research import coverage as evaluation

    return evaluation.evaluate(store.open_session(app, research_id))


@contextmanager
def session_lock(app: App, research_id: str) -> Iterator[None]:
    """The session's own lock (``.state.json.lock``), for a consistent read-modify-write across calls."""
    with store.lock(store.locate(app, research_id)):
        yield


def _file_sha(session: store.Session, relative: str | None) -> str | None:
    if not relative:
        return None
    try:
        return hashlib.sha256(store.read_regular(session.path(relative), "artifact")).hexdigest()
    except BookmarkResearchError:
        return None


def _citation(session: store.Session, citation: dict[str, Any]) -> dict[str, Any]:
    source = next((s for s in session.state["sources"] if s["id"] == citation["source_id"]), None)
    out: dict[str, Any] = {
        "source_id": citation["source_id"], "quote": citation["quote"], "match": citation.get("match", "exact"),
        "span": citation.get("span"), "found_text": citation.get("found_text"),
        "source_sha256": citation.get("source_sha256")}
    if source is None:
        out.update({k: None for k in ("url", "canonical_url", "provider", "retrieved_at", "published_at", "title",
                                      "review", "content_kind", "evidence_kind", "provenance", *ARTIFACTS)},
                   inventory_ids=[], bookmark_refs=[], artifact_sha256={k: None for k in ARTIFACTS}, valid=False,
                   problem=f"Unknown source: {citation['source_id']}")
        return out
    out.update({k: source.get(k) for k in ("url", "canonical_url", "provider", "retrieved_at", "published_at",
                                           "title", "content_kind", "evidence_kind", "provenance", *ARTIFACTS)},
               review=copy.deepcopy(source.get("review")), inventory_ids=list(source.get("inventory_ids", [])),
               bookmark_refs=copy.deepcopy(source.get("bookmark_refs", [])),
               artifact_sha256={k: _file_sha(session, source.get(k)) for k in ARTIFACTS})
    problem = citations.citation_problem(session, citation)
    verdict = (source.get("review") or {}).get("verdict")
    if problem is None and verdict != "accepted":
        problem = f"Source {source['id']} is not accepted after content review (verdict: {verdict})"
    out.update(valid=problem is None, problem=problem)
    return out


def claim_evidence(app: App, research_id: str, claim_id: str) -> dict[str, Any]:
    """A claim with every citation re-verified now; evidence problems are reported, never raised."""
    session = store.open_session(app, research_id)
    claim = next((c for c in session.state["claims"] if c["id"] == claim_id), None)
    if claim is None:
        raise NotFoundError(f"Unknown claim: {claim_id}")
    return {"research_id": session.id, "claim_id": claim["id"], "question_id": claim["question_id"],
            "statement": claim["statement"], "confidence": claim["confidence"], "inference": claim["inference"],
            "status": claim["status"], "retraction": claim.get("retraction"),
            "citations": [_citation(session, c) for c in claim["citations"]]}


def source_text(app: App, research_id: str, source_id: str) -> str:
    """A source's saved text, verified against its SHA-256 (raises when missing, unextracted or edited)."""
    session = store.open_session(app, research_id)
    return bodies.load(session, citations.source_by_id(session.state, source_id)).text


def source_freshness(app: App, research_id: str) -> dict[str, Any]:
    """The frozen input version compared with the current index (``not_applicable`` for URL lists)."""
    session = store.open_session(app, research_id)
    return freshness.source_freshness(app, session.state, session.inventory())


def eligible_claim_ids(app: App, research_id: str) -> list[str]:
    """Active claims whose every citation is an accepted source whose saved text still holds the quote."""
    session = store.open_session(app, research_id)
    return eligible(session)


def eligible(session: store.Session) -> list[str]:
    out = []
    for claim in session.state["claims"]:
        if claim["status"] != "active":
            continue
        ok = True
        for citation in claim["citations"]:
            source = next((s for s in session.state["sources"] if s["id"] == citation["source_id"]), None)
            if (source is None or (source.get("review") or {}).get("verdict") != "accepted"
                    or citations.citation_problem(session, citation) is not None):
                ok = False
                break
        if ok:
            out.append(claim["id"])
    return out
