"""``research_coverage``: how much of the frozen input is accounted for, read and substantively reviewed.

Recomputed from the evidence on every call (there is no stored completion flag): saved texts are
re-verified against their hashes, citations against their spans, reviews against their rules.
"""

from __future__ import annotations

from typing import Any

from bookmark_research.errors import InvalidInputError
from bookmark_research.research import bodies, citations, inventory, reviews
from bookmark_research.research.store import Session

FILTERS = ("all", "missing", "unread", "unreviewed", "blocked", "excluded", "reviewed")
FLAGS = ("missing", "unread", "unreviewed", "blocked", "excluded", "reviewed")
PAGE_CHARS = 900_000
NOT_ORIGINAL = ("external_report", "scholarly_record")


class Evaluator:
    """Caches per-source and per-citation checks for one evaluation."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._source_problem: dict[str, str | None] = {}

    def source_problem(self, source: dict[str, Any]) -> str | None:
        if source["id"] not in self._source_problem:
            self._source_problem[source["id"]] = bodies.problem(self.session, source)
        return self._source_problem[source["id"]]

    def claim_issues(self, claim: dict[str, Any]) -> list[str]:
        if claim["status"] == "retracted":
            return [f"Retracted claim: {claim['id']}"]
        issues = []
        for citation in claim["citations"]:
            problem = citations.citation_problem(self.session, citation)
            if problem:
                issues.append(f"{claim['id']}: {problem}")
        return issues


def _metric(count: int, total: int) -> dict[str, Any]:
    return {"count": count, "total": total, "rate": round(count / total, 6) if total else None}


def recorded_gaps(state: dict[str, Any], question_id: str) -> list[dict[str, Any]]:
    """Every gap recorded for a question, oldest first, each ``open`` (the question's current gap) or
    ``superseded`` (a later answer or gap replaced it); a gap is never lost from the report."""
    events = [e for e in state["events"] if e.get("kind") == "gap" and isinstance(e.get("value"), dict)
              and e["value"].get("id") == question_id and isinstance(e["value"].get("gap"), str)]
    out = [{"text": e["value"]["gap"], "at": e["at"], "status": "superseded"} for e in events]
    current = next((q.get("gap") for q in state["questions"] if q["id"] == question_id), None)
    if current:
        if out and out[-1]["text"] == current:
            out[-1]["status"] = "open"
        else:
            out.append({"text": current, "at": None, "status": "open"})
    return out


def question_rows(ev: Evaluator) -> list[dict[str, Any]]:
    state = ev.session.state
    claims = {c["id"]: c for c in state["claims"]}
    out = []
    for q in state["questions"]:
        issues: list[str] = []
        if q["status"] != "answered":
            issues.append(f"Question is {q['status']}")
        elif not q["claim_ids"]:
            issues.append("The answer has no supporting claim")
        else:
            for cid in q["claim_ids"]:
                claim = claims.get(cid)
                issues += [f"Unknown claim: {cid}"] if claim is None else ev.claim_issues(claim)
        out.append({"id": q["id"], "status": q["status"], "complete": not issues, "gap": q["gap"],
                    "recorded_gaps": recorded_gaps(state, q["id"]), "issues": issues})
    return out


def evaluate(session: Session) -> dict[str, Any]:
    """The full coverage evaluation, rows included (what the coverage file stores)."""
    state = session.state
    ev = Evaluator(session)
    manifest = session.inventory()
    selected = state["source_scope"]["selected_inventory_ids"]
    entries = {e["id"]: e for e in manifest["entries"]}
    linked: dict[str, list[dict[str, Any]]] = {}
    for source in state["sources"]:
        if source.get("evidence_kind") in NOT_ORIGINAL:
            continue
        for iid in source.get("inventory_ids", []):
            linked.setdefault(iid, []).append(source)
    review_of = {r["inventory_id"]: r for r in state["inventory_reviews"]}
    rows = []
    for iid in selected:
        sources = linked.get(iid, [])
        usable = [s["id"] for s in sources if (s.get("review") or {}).get("verdict") == "accepted"
                  and ev.source_problem(s) is None]
        review = review_of.get(iid)
        disposition = review["disposition"] if review else "unreviewed"
        issues = reviews.substantiation_issues(session, review) if disposition == "reviewed" else []
        accounted = review is not None or bool(sources)
        substantive = disposition == "reviewed" and not issues
        excluded = disposition == "excluded"
        rows.append({"id": iid, "original_url": entries[iid]["original_url"], "source_ids": [s["id"] for s in sources],
                     "usable_source_ids": usable, "disposition": disposition, "review": review, "issues": issues,
                     "accounted_for": accounted, "usable_text": bool(usable), "substantive_review": substantive,
                     "missing": not accounted, "unread": not excluded and not usable,
                     "unreviewed": not excluded and not substantive, "blocked": disposition == "blocked" or bool(issues),
                     "excluded": excluded, "reviewed": substantive})
    questions = question_rows(ev)
    blockers = []
    if not state.get("source_scope") and state.get("source_ids"):
        blockers.append("Legacy session has no frozen inventory; whole-input coverage is unavailable")
    if rows:
        if any(r["unreviewed"] for r in rows):
            blockers.append("Original input URLs still need substantive review")
        if not any(r["substantive_review"] for r in rows):
            blockers.append("No original input has a substantive, evidence-backed review")
    if any(not q["complete"] for q in questions):
        blockers.append("Research questions remain unanswered or their evidence is invalid")
    if any(c["status"] == "open" for c in state["conflicts"]):
        blockers.append("Unresolved evidence conflicts remain")
    if any(op["status"] == "pending" for op in state["operations"]):
        blockers.append("An interrupted operation needs acknowledgement")
    if any(r["status"] in reviews.OPEN_EXTERNAL for r in state["external_runs"]):
        blockers.append("An external run still has a pending or unknown outcome")
    total = len(rows)
    return {
        "research_id": state["research_id"], "scope_total": total, "available": True,
        "legacy_note": None,
        "metrics": {"accounted_for": _metric(sum(r["accounted_for"] for r in rows), total),
                    "usable_text": _metric(sum(r["usable_text"] for r in rows), total),
                    "substantive_review": _metric(sum(r["substantive_review"] for r in rows), total),
                    "question_completion": _metric(sum(q["complete"] for q in questions), len(questions))},
        "difference_counts": {flag: sum(r[flag] for r in rows) for flag in FLAGS},
        "completion_ready": not blockers, "completion_blockers": blockers, "questions": questions, "rows": rows,
    }


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """Coverage without rows (for overviews, sources.json and the report)."""
    return {k: v for k, v in result.items() if k != "rows"}


def page(session: Session, filter: str, offset: int, limit: int) -> dict[str, Any]:
    """``research_coverage``: the evaluation with one page of rows matching ``filter``."""
    import json

    if filter not in FILTERS:
        raise InvalidInputError("Unknown coverage filter")
    result = evaluate(session)
    rows = result.pop("rows")
    chosen = rows if filter == "all" else [r for r in rows if r[filter]]
    items: list[dict[str, Any]] = []
    size = 0
    for row in chosen[offset:offset + limit]:
        text = json.dumps(row, ensure_ascii=False)
        if size + len(text) > PAGE_CHARS:
            if items:
                break
            row = {"id": row["id"], "oversized_entry": True, "artifact_path": "state.json",
                   "note": "This row is too large for one response; read it from the coverage file after finish."}
            text = json.dumps(row)
        items.append(row)
        size += len(text)
    nxt = offset + len(items)
    return {**result, "filter": filter,
            "source_scope": inventory.preview(session.state["source_scope"], str(session.directory / "context.json")),
            "items": items, "inventory_ids": [r["id"] for r in items], "offset": offset, "total": len(chosen),
            "next_offset": nxt if nxt < len(chosen) else None}
