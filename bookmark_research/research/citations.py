"""Citations: quotes verified against saved source texts, and the validity of claims built on them."""

from __future__ import annotations

from typing import Any

from bookmark_research.errors import BookmarkResearchError, InvalidInputError, NotFoundError
from bookmark_research.research import bodies
from bookmark_research.research.quotes import Match, closest_passage, is_cjk, locate, normalize, recheck
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
    for index, citation in enumerate(citations):
        try:
            out.append(_verify_one(session, citation, allow_rejected))
        except BookmarkResearchError as exc:  # name the citation (a claim has up to 12)
            raise type(exc)(f"citations[{index}]: {exc.message}") from None
    return out


def _verify_one(session: Session, citation: Any, allow_rejected: bool) -> dict[str, Any]:
    if not isinstance(citation, dict) or set(citation) != {"source_id", "quote"}:
        raise InvalidInputError("Each citation needs source_id and quote only")
    source = source_by_id(session.state, citation["source_id"])
    if rejected(source) and not allow_rejected:
        raise InvalidInputError(f"Source was rejected during content review: {source['id']}")
    quote = citation["quote"]
    if not isinstance(quote, str) or not quote.strip() or len(quote.strip()) > MAX_QUOTE or "\x00" in quote:
        raise InvalidInputError(f"quote: A quote must be 1 to {MAX_QUOTE} characters of text")
    trivial = trivial_quote(quote)
    if trivial:
        raise InvalidInputError(f"quote: {trivial}")
    try:
        body = bodies.load(session, source)
    except bodies.EvidenceError as exc:
        raise bodies.EvidenceError(f"source {source['id']}: {exc.message}") from None
    prepared = session.prepared_quotes.get((source["sha256"], quote))
    found, passage = prepared if prepared is not None else (locate(body, quote), None)
    if found is None:
        passage = passage if prepared is not None else closest_passage(body, quote)
        hint = (f'; closest passage in {source["id"]}: "{passage}"' if passage else
                f"; no passage of {source['id']} shares words with it (read it with research_source; terminal: "
                f"research source {session.id} {source['id']})")
        raise InvalidInputError(f"Quote is absent from saved source {source['id']}{hint}")
    return {"source_id": source["id"], "quote": quote.strip(), "source_sha256": source["sha256"],
            "quote_verified": True, **found.as_citation()}


MIN_QUOTE = 8  # characters after normalisation (4 for CJK text)


def trivial_quote(quote: str) -> str | None:
    """Why ``quote`` is too slight to prove anything (a letter, a number, a word fragment), or ``None``."""
    text = normalize(quote)
    cjk = sum(is_cjk(c) for c in text)
    if not any(c.isalnum() for c in text) or (len(text) < MIN_QUOTE and cjk < 4):
        return (f"A quote must carry at least {MIN_QUOTE} characters of the page's words (4 for Chinese, Japanese "
                "or Korean text); quote the sentence that supports the claim")
    return None


def prepare(session: Session, items: list[Any]) -> dict[tuple[str, str], tuple[Match | None, str | None]]:
    """Look up every quote of ``items`` (record entries) in a snapshot of the session, without its lock.

    Keyed by (source SHA-256, quote): the saved texts are content addressed and hash-checked, so what is
    found here still holds when :func:`verify` runs under the lock, which then only takes the result (a
    long near miss on a large page is searched while other steps of the session go on).
    """
    prepared: dict[tuple[str, str], tuple[Match | None, str | None]] = {}
    sources = {s["id"]: s for s in session.state.get("sources", []) if isinstance(s, dict) and "id" in s}
    for item in items:
        cited = item.get("citations") if isinstance(item, dict) else None
        for citation in cited if isinstance(cited, list) else []:
            if not isinstance(citation, dict):
                continue
            source, quote = sources.get(citation.get("source_id")), citation.get("quote")  # type: ignore[arg-type]
            if (source is None or not bodies.has_text(source) or not isinstance(quote, str) or not quote.strip()
                    or len(quote.strip()) > MAX_QUOTE or "\x00" in quote or (source["sha256"], quote) in prepared):
                continue
            try:
                body = bodies.load(session, source)
            except bodies.EvidenceError:
                continue
            found = locate(body, quote)
            prepared[(source["sha256"], quote)] = (found, None if found else closest_passage(body, quote))
    return prepared


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
