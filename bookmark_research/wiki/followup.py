"""Wiki pages a finished research session could update (``research_finish``'s ``wiki_follow_up``)."""

from __future__ import annotations

from typing import Any

MAX_TERMS = 6


def wiki_candidates(app: Any, terms: list[str], limit: int = 5) -> list[dict[str, Any]]:
    """Existing pages found by wiki search for up to 6 distinct terms, ranked by how many terms match.

    Ties keep the better search rank of the first matching term, then page_id. Stale pages are never
    candidates. Any wiki failure gives no candidates: a follow-up suggestion never fails the caller.
    """
    from bookmark_research.wiki.read import search

    chosen: list[str] = []
    for term in terms:
        term = " ".join(str(term).split())
        if term and term.casefold() not in {t.casefold() for t in chosen}:
            chosen.append(term)
        if len(chosen) == MAX_TERMS:
            break
    found: dict[str, dict[str, Any]] = {}
    try:
        for term in chosen:
            result = search(app, term[:500], 0, 20)
            for rank, row in enumerate(result["results"]):
                entry = found.setdefault(row["page_id"], {
                    "page_id": row["page_id"], "title": row["title"], "kind": row["kind"], "revision": row["revision"],
                    "status": row["validation"]["status"], "matched_terms": [], "best_rank": rank})
                entry["matched_terms"].append(term)
                entry["best_rank"] = min(entry["best_rank"], rank)
    except Exception:
        return []
    ranked = sorted(found.values(), key=lambda e: (-len(e["matched_terms"]), e["best_rank"], e["page_id"]))
    return [{k: v for k, v in e.items() if k != "best_rank"} for e in ranked[:limit]]
