"""Is a published revision still true to its evidence? Issues per record and the page's status.

``stale`` when any issue is an error (evidence no longer verifies, a linked page or its file is gone),
else ``needs_review`` when a cited session's input changed or cannot be checked and no matching
acknowledgement exists, else ``current``.
"""

from __future__ import annotations

from typing import Any

from bookmark_research.wiki import cache
from bookmark_research.wiki.evidence import ARTIFACTS, Evidence, cited_research_ids, digest
from bookmark_research.wiki.render import evidence_copy
from bookmark_research.wiki.store import Wiki

SEMANTIC_REVIEW = "caller_declared; not evaluated by lint"


def issue(code: str, severity: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"code": code, "severity": severity, "message": message[:1000], **extra}


def _inputs(record: dict[str, Any]) -> dict[str, Any]:
    """What validation needs from a record: a pure function of its content, so kept by content hash."""
    return {"claims": [(e["research_id"], e["claim_id"], digest(e)) for e in record["evidence"]],
            "research_ids": cited_research_ids(record["evidence"]),
            "acknowledged": {(a["research_id"], a["input_version"]): a for a in record.get("acknowledged", [])},
            "links": [(link["page_id"], link["revision"], link["markdown_file"])
                      for link in record.get("resolved_links", [])],
            "copies": _copies(record)}


def _copies(record: dict[str, Any]) -> list[tuple[str, str]]:
    """The wiki's copies of the saved evidence a record cites, each once: ``(copy, expected SHA-256)``."""
    found: dict[str, str] = {}
    for snap in record["evidence"]:
        for cite in snap["citations"]:
            for key in ARTIFACTS:
                rel, expected = cite.get(key), (cite.get("artifact_sha256") or {}).get(key)
                if rel and expected:
                    found.setdefault(evidence_copy(snap["research_id"], rel), expected)
    return list(found.items())


def record_issues(wiki: Wiki, record: dict[str, Any], index: dict[str, Any], evidence: Evidence,
                  sha256: str | None = None) -> list[dict[str, Any]]:
    """Issues of one verified revision record against the sessions and the index as they are now.

    ``sha256`` (the record's hash, when known) lets the record's own part of the work be remembered.
    """
    inputs = cache.RECORD_INPUTS.get(sha256, ("content",)) if sha256 else None
    if inputs is None:
        inputs = _inputs(record)
        if sha256:
            cache.RECORD_INPUTS.put(sha256, ("content",), inputs)
    issues: list[dict[str, Any]] = []
    for rid, cid, stored in inputs["claims"]:
        check = evidence.check(rid, cid)
        if check.error is not None:
            issues.append(issue("invalid_evidence", "error", check.error, research_id=rid, claim_id=cid))
        elif check.digest != stored:
            issues.append(issue("invalid_evidence", "error",
                                f"Wiki evidence changed since this revision was published: {rid}/{cid}",
                                research_id=rid, claim_id=cid))
    acknowledged = inputs["acknowledged"]
    for rid in inputs["research_ids"]:
        fresh = evidence.freshness(rid)
        removed = any(isinstance(s, dict) and s.get("state") == "removed"
                      for s in (fresh.get("source_states") or {}).values())
        if fresh.get("state") == "unknown" or removed:
            issues.append(issue("source_input_unavailable", "warning",
                                f"The bookmark input of {rid} cannot be checked (removed or unreadable); review "
                                "the page against its sources", research_id=rid, source_freshness=fresh))
        elif fresh.get("requires_review"):
            ack = acknowledged.get((rid, fresh.get("current_input_version")))
            if ack is not None:
                issues.append(issue("source_change_acknowledged", "info",
                                    f"The input of {rid} changed and the change was reviewed", research_id=rid,
                                    acknowledged_at=ack["acknowledged_at"], note=ack["note"], source_freshness=fresh))
            else:
                issues.append(issue("source_input_changed", "warning",
                                    f"The bookmark input of {rid} changed since the research froze it; rewrite the "
                                    "page with reviewed_input_version or run wiki ack", research_id=rid,
                                    source_freshness=fresh))
    verified = evidence.verified_copies  # (copy, SHA-256) pairs that held in this operation: a set lookup each
    for pair in inputs["copies"]:
        if pair in verified:
            continue
        copy, expected = pair
        actual = evidence.copy_digest(wiki, copy)
        if actual is None or actual == expected:
            verified.add(pair)
        else:
            issues.append(issue("artifact_error", "error", f"Wiki copy of saved evidence changed: {copy}; the next "
                                "write of a page citing it restores it from the research session", file=copy))
    pages = index["pages"]
    for page_id, revision, markdown_file in inputs["links"]:
        target = pages.get(page_id)
        if target is None:
            issues.append(issue("missing_link", "error", f"Linked Wiki page no longer exists: {page_id}",
                                target=page_id))
            continue
        if target["revision"] != revision:
            issues.append(issue("link_has_newer_revision", "warning", f"Linked page {page_id} has a newer revision",
                                target=page_id, linked_revision=revision, current_revision=target["revision"]))
        if not _present(wiki, markdown_file):
            issues.append(issue("missing_link_artifact", "error", f"Linked revision file is missing: {markdown_file}",
                                target=page_id))
    return issues


def _present(wiki: Wiki, rel: str) -> bool:
    try:
        return wiki.is_file(rel)
    except Exception:
        return False


def status(issues: list[dict[str, Any]]) -> str:
    if any(i["severity"] == "error" for i in issues):
        return "stale"
    if any(i["code"] in ("source_input_changed", "source_input_unavailable") for i in issues):
        return "needs_review"
    return "current"


def validation(issues: list[dict[str, Any]]) -> dict[str, Any]:
    return {"status": status(issues), "issues": issues, "semantic_review": SEMANTIC_REVIEW}
