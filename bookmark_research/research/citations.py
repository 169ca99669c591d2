"""Citations: quotes verified against saved source texts, and the validity of claims built on them."""

from __future__ import annotations

from typing import Any

from bookmark_research.errors import InvalidInputError, NotFoundError
from bookmark_research.research import bodies
from bookmark_research.research.quotes import closest_passage, locate, recheck
from bookmark_research.research.store import Session

MAX_QUOTE = 4000


def source_by_id(state: dict[str, Any], source_id: Any) -> dict[str, Any]:
    source = next((s for s in state["sources"] if s["id"] == source_id), None) if isinstance(source_id, str) else None
    if source is None:
        raise NotFoundError(f"Unknown source: {source_id}")
    return source


def claim_by_id(state: dict[str, Any], claim_id: Any) -> dict[str, Any]:
    claim = next((c for c in state["claims"] if c["id"] == claim_id), None) if isinstance(claim_id, str) else None
    if claim is None:
        raise NotFoundError(f"Unknown claim: {claim_id}")
    return claim


def rejected(source: dict[str, Any]) -> bool:
    return (source.get("review") or {}).get("verdict") == "rejected"


def verify(session: Session, citations: Any, *, allow_rejected: bool = False, minimum: int = 1,
           maximum: int = 12) -> list[dict[str, Any]]:
    """Check each ``{source_id, quote}`` against its saved text; the stored citation records."""
    if not isinstance(citations, list) or not minimum <= len(citations) <= maximum:
        raise InvalidInputError(f"A claim needs {minimum} to {maximum} citations from fetched sources")
    out = []
    for citation in citations:
        if not isinstance(citation, dict) or set(citation) != {"source_id", "quote"}:
            raise InvalidInputError("Each citation needs source_id and quote only")
        source = source_by_id(session.state, citation["source_id"])
        if rejected(source) and not allow_rejected:
            raise InvalidInputError(f"Source was rejected during content review: {source['id']}")
        quote = citation["quote"]
        if not isinstance(quote, str) or not quote.strip() or len(quote.strip()) > MAX_QUOTE or "\x00" in quote:
            raise InvalidInputError(f"A quote must be 1 to {MAX_QUOTE} characters of text")
        body = bodies.load(session, source)
        found = locate(body, quote)
        if found is None:
            passage = closest_passage(body, quote)
            hint = (f'; closest passage in {source["id"]}: "{passage}"' if passage else
                    f"; no passage of {source['id']} shares words with it (read it with research_source)")
            raise InvalidInputError(f"Quote is absent from saved source {source['id']}{hint}")
        out.append({"source_id": source["id"], "quote": quote.strip(), "source_sha256": source["sha256"],
                    "quote_verified": True, **found.as_citation()})
    return out


def citation_problem(session: Session, citation: dict[str, Any], *, allow_rejected: bool = False) -> str | None:
    """Why a stored citation no longer holds (source gone, rejected, edited, span changed), or ``None``."""
    source = next((s for s in session.state["sources"] if s["id"] == citation.get("source_id")), None)
    if source is None:
        return f"Unknown source: {citation.get('source_id')}"
    if rejected(source) and not allow_rejected:
        return f"Source was rejected during content review: {source['id']}"
    if citation.get("source_sha256") != source.get("sha256"):
        return f"Citation snapshot changed for source {source['id']}"
    try:
        body = bodies.load(session, source)
    except bodies.EvidenceError as exc:
        return exc.message
    problem = recheck(body.text, citation)
    if problem is not None:
        return f"Quote is absent from saved source {source['id']} ({problem})"
    return None


def claim_invalid(state: dict[str, Any], claim: dict[str, Any]) -> str | None:
    """Why a claim cannot support an answer or a resolution (checks status and reviews, not files)."""
    if claim["status"] == "retracted":
        return "Retracted claims cannot support an answer or resolution"
    for citation in claim["citations"]:
        source = next((s for s in state["sources"] if s["id"] == citation["source_id"]), None)
        if source is not None and rejected(source):
            return "Claim cites a rejected source; retract and replace the claim"
    return None


def cites(claim: dict[str, Any], source_id: str) -> bool:
    return any(c["source_id"] == source_id for c in claim["citations"])
