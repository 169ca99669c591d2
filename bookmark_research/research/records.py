"""``research_record``: what the agent concludes, one entry or an all-or-nothing batch.

Kinds: claim, answer, gap, question, conflict, resolution, source_review, retraction, inventory_review,
external_run, interruption, resume. Every kind except ``resume`` needs an active session. Every successful
record appends an event ``{at, kind, value}``; a batch is applied to one in-memory copy and saved once, or
not at all. Cascades: rejecting a source reopens the answers and resolutions built on claims citing it;
retracting a claim does the same and keeps the claim (with its quotes) in the history.
"""

from __future__ import annotations

import copy
import os
import uuid
from typing import Any

from bookmark_research import atomic
from bookmark_research.clock import iso
from bookmark_research.core.app import App
from bookmark_research.errors import BookmarkResearchError, ConflictError, InvalidInputError, NotFoundError
from bookmark_research.research import bodies, citations, reviews, store
from bookmark_research.research.ids import check_identifier, digest, is_identifier
from bookmark_research.research.operations import find_operation, require_active
from bookmark_research.research.store import Session

FIELDS: dict[str, tuple[set[str], set[str]]] = {
    "claim": ({"question_id", "statement", "citations"}, {"confidence", "inference"}),
    "answer": ({"question_id", "answer", "claim_ids"}, set()),
    "gap": ({"question_id", "text"}, set()),
    "question": ({"id", "question"}, set()),
    "conflict": ({"claim_ids", "text"}, set()),
    "resolution": ({"conflict_id", "claim_ids", "text"}, set()),
    "source_review": ({"source_id", "verdict", "text"}, set()),
    "retraction": ({"claim_id", "text"}, set()),
    "inventory_review": ({"inventory_id", "disposition", "text"},
                         {"question_ids", "source_ids", "claim_ids", "citations", "reason_code"}),
    "external_run": ({"id", "provider", "run_id", "status", "text"}, {"result", "artifact_path"}),
    "interruption": ({"operation_id", "text"}, set()),
    "resume": ({"text"}, set()),
}
SINGLE_ONLY = ("resume", "external_run")
REJECTED_GAP = "A supporting source was rejected; review and replace affected claims."
RETRACTED_GAP = "A supporting claim was retracted; a revised answer is needed."
MAX_QUESTIONS = 24
MAX_BATCH = 50


def _text(entry: dict[str, Any], key: str, limit: int = 4000) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip() or len(value.strip()) > limit or "\x00" in value:
        raise InvalidInputError(f"{key} must be 1 to {limit:,} characters of text")
    return value.strip()


def limit_for(state: dict[str, Any], floor: int, per_input: int) -> int:
    return max(floor, per_input * len(state["source_scope"].get("selected_inventory_ids", [])))


def _question(state: dict[str, Any], question_id: Any) -> dict[str, Any]:
    found = next((q for q in state["questions"] if q["id"] == question_id), None)
    if found is None:
        raise NotFoundError(f"Unknown question: {question_id}")
    return found


def _claim_ids(state: dict[str, Any], value: Any, minimum: int, maximum: int = 100) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not minimum <= len(value) <= maximum or len(set(map(str, value))) != len(value):
        raise InvalidInputError(f"claim_ids must be {minimum} to {maximum} unique claim IDs")
    return [citations.claim_by_id(state, cid) for cid in value]


def _reopen(state: dict[str, Any], claim_ids: set[str], gap: str) -> None:
    """Questions answered with, and conflicts resolved by, any of ``claim_ids`` open again."""
    for question in state["questions"]:
        if question["status"] == "answered" and claim_ids & set(question["claim_ids"]):
            question.update(status="unresolved", gap=gap)
    for conflict in state["conflicts"]:
        if conflict["status"] == "resolved" and claim_ids & set((conflict.get("resolution") or {}).get("claim_ids", [])):
            conflict["status"] = "open"


def _apply(session: Session, entry: Any, in_batch: bool) -> tuple[str, str, dict[str, Any], bool]:
    """Apply one entry to ``session.state``; (kind, id, recorded, replayed)."""
    if not isinstance(entry, dict):
        raise InvalidInputError("entry must be an object")
    kind = entry.get("kind")
    if not isinstance(kind, str) or kind not in FIELDS:
        raise InvalidInputError(f"kind: Unknown research entry kind {kind!r} (one of {', '.join(FIELDS)})")
    required, optional = FIELDS[kind]
    keys = set(entry) - {"kind"}
    if not keys <= required | optional:
        takes = ", ".join(sorted(required)) + (f"; optional {', '.join(sorted(optional))}" if optional else "")
        raise InvalidInputError(f"Unknown fields of a {kind} entry: {', '.join(sorted(map(str, keys - required - optional)))} "
                                f"(a {kind} takes {takes})")
    missing = sorted(required - keys)
    if missing:
        raise InvalidInputError(f"{kind} needs {', '.join(missing)}")
    if in_batch and kind in SINGLE_ONLY:
        raise InvalidInputError("resume and external_run require a single entry call")
    state = session.state
    if kind == "resume":
        return kind, state["research_id"], *_resume(session, _text(entry, "text"))
    require_active(state)
    if len(state["events"]) >= limit_for(state, 500, 10):
        raise ConflictError("Research event limit reached; finish this session")
    replayed = False
    if kind == "claim":
        question = _question(state, entry["question_id"])
        confidence = entry.get("confidence", "medium")
        inference = entry.get("inference", False)
        if confidence not in ("low", "medium", "high") or not isinstance(inference, bool):
            raise InvalidInputError("Invalid confidence or inference field")
        if len(state["claims"]) >= limit_for(state, 100, 2):
            raise ConflictError("Research claim limit reached")
        statement = _text(entry, "statement")
        quoted = citations.verify(session, entry["citations"])
        rid = f"c{len(state['claims']) + 1}"
        recorded = {"id": rid, "question_id": question["id"], "statement": statement, "citations": quoted,
                    "confidence": confidence, "inference": inference, "status": "active", "created_at": iso()}
        state["claims"].append(recorded)
    elif kind == "answer":
        question = _question(state, entry["question_id"])
        answer = _text(entry, "answer", 12_000)
        claims = _claim_ids(state, entry["claim_ids"], 1)
        for claim in claims:
            invalid = citations.claim_invalid(state, claim)
            if invalid:
                raise InvalidInputError(invalid)
            if claim["question_id"] != question["id"]:
                raise InvalidInputError("Answer claims must belong to this question")
        question.update(status="answered", answer=answer, claim_ids=[c["id"] for c in claims], gap=None)
        rid, recorded = question["id"], copy.deepcopy(question)
    elif kind == "gap":
        question = _question(state, entry["question_id"])
        question.update(status="unresolved", gap=_text(entry, "text"))
        rid, recorded = question["id"], copy.deepcopy(question)
    elif kind == "question":
        qid = check_identifier(entry["id"], "id")
        text = _text(entry, "question")
        if any(q["id"] == qid for q in state["questions"]):
            raise InvalidInputError("Question id already exists")
        if len(state["questions"]) >= MAX_QUESTIONS:
            raise ConflictError("Research question limit reached")
        recorded = {"id": qid, "question": text, "status": "open", "answer": None, "claim_ids": [], "gap": None}
        state["questions"].append(recorded)
        rid, recorded = qid, copy.deepcopy(recorded)
    elif kind == "conflict":
        claims = _claim_ids(state, entry["claim_ids"], 2)
        rid = f"x{len(state['conflicts']) + 1}"
        recorded = {"id": rid, "status": "open", "claim_ids": [c["id"] for c in claims], "text": _text(entry, "text"),
                    "resolution": None}
        state["conflicts"].append(recorded)
    elif kind == "resolution":
        conflict = next((x for x in state["conflicts"] if x["id"] == entry["conflict_id"]), None)
        if conflict is None:
            raise NotFoundError(f"Unknown conflict: {entry['conflict_id']}")
        claims = _claim_ids(state, entry["claim_ids"], 1)
        for claim in claims:
            invalid = citations.claim_invalid(state, claim)
            if invalid:
                raise InvalidInputError(invalid)
        conflict.update(status="resolved", resolution={"text": _text(entry, "text"),
                                                       "claim_ids": [c["id"] for c in claims]})
        rid, recorded = conflict["id"], copy.deepcopy(conflict)
    elif kind == "source_review":
        source = citations.source_by_id(state, entry["source_id"])
        verdict = entry["verdict"]
        if verdict not in ("accepted", "rejected", "uncertain"):
            raise InvalidInputError("verdict must be accepted, rejected or uncertain")
        text = _text(entry, "text")
        if verdict == "accepted":
            bodies.load(session, source)
        source["review"] = {"verdict": verdict, "text": text}
        if verdict == "rejected":
            _reopen(state, {c["id"] for c in state["claims"] if citations.cites(c, source["id"])}, REJECTED_GAP)
        rid, recorded = source["id"], {"source_id": source["id"], "review": copy.deepcopy(source["review"])}
    elif kind == "retraction":
        claim = citations.claim_by_id(state, entry["claim_id"])
        claim.update(status="retracted", retraction=_text(entry, "text"), retracted_at=iso())
        _reopen(state, {claim["id"]}, RETRACTED_GAP)
        rid, recorded = claim["id"], copy.deepcopy(claim)
    elif kind == "inventory_review":
        recorded, replayed = reviews.inventory_review(session, entry, _text(entry, "text"))
        rid = recorded["inventory_id"]
    elif kind == "external_run":
        recorded, replayed = reviews.external_run(session, entry, _text(entry, "text"))
        rid = recorded["id"]
    else:  # interruption
        op = find_operation(state, entry["operation_id"]) if isinstance(entry["operation_id"], str) else None
        if op is None:
            raise NotFoundError(f"Unknown operation: {entry['operation_id']}")
        if op["status"] != "pending":
            raise InvalidInputError("Only an interrupted pending operation can be acknowledged")
        op.update(status="unknown_outcome", explanation=_text(entry, "text"), acknowledged_at=iso())
        rid, recorded = op["id"], copy.deepcopy(op)
    if not replayed:
        state["events"].append({"at": iso(), "kind": kind, "value": copy.deepcopy(recorded)})
    return kind, rid, recorded, replayed


def _resume(session: Session, text: str) -> tuple[dict[str, Any], bool]:
    state = session.state
    if state["status"] == "active":
        raise ConflictError("Only an incomplete report can be resumed; this session is active and already accepts "
                            "steps")
    if state["status"] != "incomplete":
        raise ConflictError(f"Only an incomplete report can be resumed; this session is {state['status']} (closed): "
                            "start a new session to go on")
    suffix = uuid.uuid4().hex[:12]
    previous = {}
    for key, name, ext in (("report", "report", "md"), ("sources", "sources", "json"), ("state", "state", "json")):
        source = session.directory / f"{name}.{ext}"
        target = session.directory / f"{name}-{suffix}.{ext}"
        if source.exists() or os.path.islink(source):
            atomic.write_bytes(target, store.read_regular(source, f"{name}.{ext}"))  # never through a link
            previous[key] = target.name
    for key in ("summary", "limitations", "finished_at", "artifacts"):
        state.pop(key, None)
    state["status"] = "active"
    recorded = {"status": "active", "text": text, "previous_status": "incomplete", "previous_artifacts": previous}
    state["events"].append({"at": iso(), "kind": "resume", "value": copy.deepcopy(recorded)})
    return recorded, False


def _prepare_quotes(app: App, research_id: str, items: list[Any]) -> tuple[Session | None, dict[Any, Any]]:
    """Quote look-ups (and closest passages) done on an unlocked snapshot; the locked step reuses them,
    and the snapshot itself when state.json has not changed meanwhile."""
    if not any(isinstance(i, dict) and i.get("citations") for i in items):
        return None, {}
    try:
        snapshot = store.open_session(app, research_id)
    except BookmarkResearchError:
        return None, {}  # the locked load reports it
    return snapshot, citations.prepare(snapshot, items)


def _batch_error(index: int, exc: BookmarkResearchError) -> BookmarkResearchError:
    return type(exc)(f"entries[{index}]: {exc.message}; no entries were saved")


def record(app: App, research_id: str, entry: Any = None, entries: Any = None,
           batch_id: str | None = None) -> dict[str, Any]:
    """Record one entry, or a batch of 1–50 entries all or nothing (``batch_id`` makes it replayable)."""
    if (entry is None) == (entries is None):
        raise InvalidInputError("Provide exactly one of entry or entries")
    if batch_id is not None:
        if entries is None:
            raise InvalidInputError("batch_id is only supported with entries")
        if not is_identifier(batch_id):
            raise InvalidInputError("batch_id must be an identifier ([A-Za-z0-9][A-Za-z0-9_.-]*, at most 80 characters)")
    if entries is not None:
        if not isinstance(entries, list) or not 1 <= len(entries) <= MAX_BATCH:
            raise InvalidInputError(f"entries must be a list of 1 to {MAX_BATCH} entries")
        for index, item in enumerate(entries):
            if isinstance(item, dict) and item.get("kind") in SINGLE_ONLY:
                raise InvalidInputError(f"entries[{index}]: resume and external_run require a single entry call")
    snapshot, prepared = _prepare_quotes(app, research_id, [entry] if entries is None else entries)
    with store.locked_session(app, research_id, snapshot) as session:
        session.prepared_quotes = prepared
        if entries is None:
            kind, rid, recorded, replayed = _apply(session, entry, False)
            if not replayed or session.materialised:
                session.save()
            out: dict[str, Any] = {"research_id": session.id, "kind": kind, "id": rid, "recorded": recorded,
                                   "replayed": replayed}
            return out
        batch_digest = digest(entries)
        batches = session.state.setdefault("record_batches", {}) if batch_id is not None else {}
        if batch_id is not None and batch_id in batches:
            if batches[batch_id]["digest"] != batch_digest:
                raise ConflictError("batch_id already used with different entries")
            return {**copy.deepcopy(batches[batch_id]["result"]), "replayed": True}
        if batch_id is not None and len(batches) >= limit_for(session.state, 500, 10):
            raise ConflictError("Research record batch limit reached; finish this session")
        original = session.state
        session.state = copy.deepcopy(original)
        results = []
        for index, item in enumerate(entries):
            try:
                kind, rid, _recorded, replayed = _apply(session, item, True)
            except BookmarkResearchError as exc:
                session.state = original
                raise _batch_error(index, exc) from None
            results.append({"index": index, "kind": kind, "id": rid, "replayed": replayed})
        result: dict[str, Any] = {"research_id": session.id, "count": len(results), "results": results,
                                  "replayed": False}
        if batch_id is not None:
            result["batch_id"] = batch_id
            session.state.setdefault("record_batches", {})[batch_id] = {"digest": batch_digest,
                                                                        "result": copy.deepcopy(result)}
        session.save()
        return result
