"""Two record kinds with rules of their own: ``inventory_review`` (is an original input accounted for,
and how) and ``external_run`` (observations of work done outside this tool)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from bookmark_research import atomic
from bookmark_research.clock import iso
from bookmark_research.errors import InvalidInputError, NotFoundError, StorageError
from bookmark_research.paths import enclosing_package
from bookmark_research.research import bodies, citations
from bookmark_research.research.ids import is_identifier, sha256_bytes, sha256_text
from bookmark_research.research.store import Session, make_dirs, read_regular

DISPOSITIONS = ("reviewed", "excluded", "blocked")
REASON_CODES = ("out_of_scope", "non_content")
SECONDARY = {"external_report": "An external report does not establish that its cited original page was read",
             "scholarly_record": "A scholarly record does not establish that its original page was read"}
EXTERNAL_STATUSES = ("prepared", "pending", "queued", "in_progress", "completed", "cancelled", "error",
                     "unknown_outcome")
OPEN_EXTERNAL = ("pending", "queued", "in_progress", "unknown_outcome")
RUN_PREFIX = {"openai": "resp_", "parallel": "trun_"}
MAX_RESULT = 10_000_000


def id_list(entry: dict[str, Any], key: str, maximum: int, known: set[str], label: str) -> list[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or len(value) > maximum:
        raise InvalidInputError(f"{key} must contain at most {maximum} IDs")
    if any(not isinstance(v, str) for v in value):
        raise InvalidInputError(f"{key} must contain IDs")
    if len(set(value)) != len(value):
        raise InvalidInputError(f"{key} must be unique")
    unknown = [v for v in value if v not in known]
    if unknown:
        raise NotFoundError(f"Unknown {label}: {', '.join(unknown[:5])}")
    return value


def substantiation_issues(session: Session, review: dict[str, Any]) -> list[str]:
    """Why a ``reviewed`` disposition is not (or no longer) backed by accepted, quoted original-page text."""
    state = session.state
    issues: list[str] = []
    declared = review.get("source_ids", [])
    for sid in declared:
        source = next((s for s in state["sources"] if s["id"] == sid), None)
        if source is None:
            issues.append(f"Unknown source: {sid}")
            continue
        problem = bodies.problem(session, source)
        if problem:
            issues.append(f"Source {sid}: {problem}")
        if (source.get("review") or {}).get("verdict") != "accepted":
            issues.append(f"Source {sid} is not accepted after content review")
        if source.get("evidence_kind") in SECONDARY:
            issues.append(SECONDARY[source["evidence_kind"]])
        if review["inventory_id"] not in source.get("inventory_ids", []):
            issues.append(f"Source {sid} is not linked to this original URL")
    for citation in review.get("citations", []):
        if citation["source_id"] not in declared:
            issues.append("A review citation must refer to its declared original-page sources")
        problem = citations.citation_problem(session, citation)
        if problem:
            issues.append(problem)
    for cid in review.get("claim_ids", []):
        claim = next((c for c in state["claims"] if c["id"] == cid), None)
        if claim is None:
            issues.append(f"Unknown claim: {cid}")
            continue
        invalid = citations.claim_invalid(state, claim)
        if invalid:
            issues.append(f"{cid}: {invalid}")
        for citation in claim["citations"]:
            problem = citations.citation_problem(session, citation)
            if problem:
                issues.append(f"{cid}: {problem}")
            source = next((s for s in state["sources"] if s["id"] == citation["source_id"]), None)
            if source is not None and (source.get("review") or {}).get("verdict") != "accepted":
                issues.append(f"Source {source['id']} is not accepted after content review")
        if claim["question_id"] not in review.get("question_ids", []):
            issues.append("Review claims must belong to its declared questions")
        if not any(c["source_id"] in declared for c in claim["citations"]):
            issues.append("A review claim must cite this original page")
    if not declared or not review.get("question_ids") or not (review.get("citations") or review.get("claim_ids")):
        issues.append("Substantive review needs a question, accepted original-page text and a quoted judgment")
    return list(dict.fromkeys(issues))


def inventory_review(session: Session, entry: dict[str, Any], text: str) -> tuple[dict[str, Any], bool]:
    state = session.state
    inventory_id = entry["inventory_id"]
    if inventory_id not in set(state["source_scope"]["selected_inventory_ids"]):
        raise NotFoundError(f"Unknown inventory item: {inventory_id}")
    disposition = entry["disposition"]
    if disposition not in DISPOSITIONS:
        raise InvalidInputError("disposition must be reviewed, excluded or blocked")
    reason = entry.get("reason_code")
    if reason is not None and not is_identifier(reason):
        raise InvalidInputError("reason_code must be an identifier")
    if disposition == "excluded" and reason not in REASON_CODES:
        raise InvalidInputError("Excluded inputs need reason_code=out_of_scope or non_content and a specific "
                                "explanation")
    question_ids = id_list(entry, "question_ids", 24, {q["id"] for q in state["questions"]}, "questions")
    source_ids = id_list(entry, "source_ids", 12, {s["id"] for s in state["sources"]}, "sources")
    claim_ids = id_list(entry, "claim_ids", 100, {c["id"] for c in state["claims"]}, "claim")
    reviewed = disposition == "reviewed"
    if reviewed:
        for cid in claim_ids:
            claim = citations.claim_by_id(state, cid)
            if claim["status"] == "retracted":
                raise InvalidInputError("Retracted claims cannot support an answer or resolution")
    quoted = citations.verify(session, entry.get("citations", []), allow_rejected=not reviewed, minimum=0)
    record = {"id": inventory_id, "inventory_id": inventory_id, "disposition": disposition, "text": text,
              "reason_code": reason, "question_ids": question_ids, "source_ids": source_ids, "claim_ids": claim_ids,
              "citations": quoted}
    if reviewed:
        issues = substantiation_issues(session, record)
        if issues:
            raise InvalidInputError("Inventory review is not substantiated: " + "; ".join(issues))
    previous = next((r for r in state["inventory_reviews"] if r["inventory_id"] == inventory_id), None)
    if previous is not None and {k: v for k, v in previous.items() if k != "updated_at"} == record:
        return previous, True
    record["updated_at"] = iso()
    state["inventory_reviews"] = [r for r in state["inventory_reviews"] if r["inventory_id"] != inventory_id]
    state["inventory_reviews"].append(record)
    return record, False


def _transition_allowed(previous: dict[str, Any], provider: str, run_id: str, run: str) -> bool:
    if previous["provider"] != provider:
        return False
    if provider in RUN_PREFIX:
        return (previous["run_id"] == run and re.fullmatch(r"er-[0-9a-f]{24}", run) is not None
                and previous["status"] in ("prepared", "pending", "unknown_outcome")
                and re.fullmatch(re.escape(RUN_PREFIX[provider]) + r"[A-Za-z0-9_-]{1,192}", run_id) is not None)
    return previous["status"] == "prepared" and (previous["run_id"] == run or previous["run_id"].startswith("local:"))


def external_run(session: Session, entry: dict[str, Any], text: str) -> tuple[dict[str, Any], bool]:
    state = session.state
    run, provider, run_id, status = entry["id"], entry["provider"], entry["run_id"], entry["status"]
    if not is_identifier(run) or not is_identifier(provider):
        raise InvalidInputError("external_run id and provider must be identifiers")
    if not isinstance(run_id, str) or not run_id.strip() or len(run_id) > 2000 or "\x00" in run_id:
        raise InvalidInputError("run_id must be 1 to 2000 characters of text")
    if status not in EXTERNAL_STATUSES:
        raise InvalidInputError("Unknown external run status")
    previous = next((r for r in state["external_runs"] if r["id"] == run), None)
    if previous is not None:
        if (previous["provider"] != provider or previous["run_id"] != run_id) and not _transition_allowed(
                previous, provider, run_id, run):
            raise InvalidInputError("External reference id already belongs to another provider or run_id")
        if status == "prepared" and previous["status"] != "prepared":
            raise InvalidInputError("An observed external run cannot return to prepared; preserve its actual outcome")
    record: dict[str, Any] = {"id": run, "provider": provider, "run_id": run_id, "status": status, "text": text}
    if "result" in entry:
        if not isinstance(entry["result"], dict):
            raise InvalidInputError("result must be an object")
        body = json.dumps(entry["result"], sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
        if len(body) > MAX_RESULT:
            raise InvalidInputError("External result is too large; use artifact_path for a saved file")
        digest = sha256_text(body)
        relative = f"external-runs/{sha256_text(run)[:24]}-{digest[:24]}.json"
        target = session.directory / relative
        if target.exists():
            if sha256_bytes(read_regular(target, "external result")) != digest:
                raise StorageError("Saved external result artifact hash changed")
        else:
            make_dirs(target.parent)
            atomic.write_text(target, body)
        record.update(result_file=relative, result_sha256=digest)
    if "artifact_path" in entry:
        path = entry["artifact_path"]
        error = "External artifact_path must name an existing file outside source packages"
        if not isinstance(path, str) or not Path(path).expanduser().is_absolute() or "\x00" in path:
            raise InvalidInputError(error)
        resolved = Path(os.path.realpath(Path(path).expanduser()))
        if not resolved.is_file() or enclosing_package(resolved) is not None:
            raise InvalidInputError(error)
        record.update(artifact_path=str(resolved), artifact_sha256=sha256_bytes(resolved.read_bytes()))
    if previous is not None:
        merged = {**previous, **record}
        if {k: v for k, v in merged.items() if k != "observed_at"} == {
                k: v for k, v in previous.items() if k != "observed_at"}:
            return previous, True
        record = merged
    record["observed_at"] = iso()
    state["external_runs"] = [r for r in state["external_runs"] if r["id"] != run] + [record]
    return record, False


def external_artifact_problem(session: Session, run: dict[str, Any]) -> str | None:
    """Whether an external run's saved result and artifact still have their recorded hashes."""
    try:
        if run.get("result_file"):
            data = read_regular(session.path(run["result_file"]), "external result")
            if sha256_bytes(data) != run.get("result_sha256"):
                return "Saved external result artifact hash changed"
        if run.get("artifact_path"):
            data = Path(run["artifact_path"]).read_bytes()
            if sha256_bytes(data) != run.get("artifact_sha256"):
                return "Saved external result artifact hash changed"
    except (OSError, NotFoundError, StorageError):
        return "Saved external result artifact hash changed"
    return None
