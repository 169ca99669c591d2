"""What ``research_start``, ``research_status`` and ``research_finish`` show: a bounded overview of a
session (previews of the first 20 records of each section, counts, paging hints), one paged section, the
list of sessions, and paged reads of the inventory and of a saved source text."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from bookmark_research.core.app import App
from bookmark_research.errors import BookmarkResearchError, InvalidInputError, NotFoundError
from bookmark_research.research import bodies, citations, coverage, inventory, store
from bookmark_research.research.operations import BUDGET_UNIT, remaining
from bookmark_research.research.store import Session

PREVIEW = 20
LONG_TEXT = 2000
PAGE_CHARS = 900_000
SECTIONS = ("questions", "claims", "sources", "operations", "conflicts", "bookmark_context", "events", "inventory",
            "inventory_reviews", "external_runs")
EXECUTION = "Host model must choose each next action; no background worker is running."
EVIDENCE_NOTE = ("Quotes are verified to stand in the saved text (exactly, or after the documented "
                 "normalisation); that proves presence, not meaning. Completeness and freshness of pages are never "
                 "established; several providers returning one URL are one page, not independent confirmation.")
DETAIL_NOTE = ("Sections show their first 20 records; research_status with section, offset and limit pages through "
               "each one; research_inventory and research_coverage page through the frozen input.")


def _cut(record: dict[str, Any]) -> dict[str, Any]:
    out = dict(record)
    for field in ("answer", "question", "statement", "text", "title"):
        value = out.get(field)
        if isinstance(value, str) and len(value) > LONG_TEXT:
            out[field] = value[:LONG_TEXT]
            out[f"{field}_truncated"] = True
    return out


def shape(section: str, record: dict[str, Any]) -> dict[str, Any]:
    """A record as previews show it (long fields cut, bulky fields summarised)."""
    out = _cut(record)
    if section == "claims":
        out["citations"] = []
        for c in record["citations"]:
            c = {k: v for k, v in c.items() if k != "found_text"}
            if len(c["quote"]) > 300:
                c.update(quote=c["quote"][:300], quote_truncated=True)
            out["citations"].append(c)
    elif section == "sources":
        from bookmark_research.research.evidence import source_failure

        if source_failure(record):
            out["failure"] = source_failure(record)
        out.pop("bookmark_refs", None)
        out.pop("instance_ids", None)
        out["bookmark_ref_count"] = len(record.get("bookmark_refs", []))
        if isinstance(out.get("title"), str) and len(out["title"]) > 500:
            out.update(title=out["title"][:500], title_truncated=True)
    elif section == "operations":
        out.pop("parameters", None)
    elif section == "bookmark_context":
        out = {k: record.get(k) for k in ("source_id", "section_id", "item_id", "title", "url", "instance_id",
                                          "input_index") if k in record}
    elif section == "inventory":
        out.pop("instances", None)
        out["instance_count"] = len(record.get("instances", []))
    return out


def section_records(session: Session, section: str) -> list[dict[str, Any]]:
    state = session.state
    if section == "bookmark_context":
        return session.context()["bookmarks"]
    if section == "inventory":
        manifest = session.inventory()
        chosen = set(state["source_scope"]["selected_inventory_ids"])
        return [e for e in manifest["entries"] if e["id"] in chosen]
    return state[section]


def artifacts(session: Session) -> dict[str, Any] | None:
    """The finish artifacts, as absolute paths inside the session's current folder."""
    found = session.state.get("artifacts")
    if not found:
        return None
    return {k: str(session.path(v)) for k, v in found.items()}


def overview(session: Session, cover: dict[str, Any] | None = None) -> dict[str, Any]:
    state = session.state
    directory = session.directory
    counts: dict[str, int] = {}
    previews: dict[str, list[dict[str, Any]]] = {}
    pagination: dict[str, dict[str, Any]] = {}
    for section in SECTIONS:
        records = section_records(session, section) if section != "events" else state["events"]
        counts[section] = len(records)
        pagination[section] = {"total": len(records), "next_offset": PREVIEW if len(records) > PREVIEW else None}
        if section != "events":
            previews[section] = [shape(section, r) for r in records[:PREVIEW]]
    if cover is None:
        cover = coverage.summary(coverage.evaluate(session))
    return {
        "research_id": state["research_id"], "directory": str(directory), "work_directory": str(directory / "work"),
        "status": state["status"], "brief": state["brief"], "scope": state["scope"], "source_ids": state["source_ids"],
        "providers": state["providers"], "search_fallback_providers": state["search_fallback_providers"],
        "fetch_providers": state["fetch_providers"], "scholarly_providers": state.get("scholarly_providers", []),
        "context_manifest": str(directory / "context.json"), "inventory_manifest": str(directory / "inventory.json"),
        "source_scope": inventory.preview(state["source_scope"], str(directory / "context.json")),
        "coverage": cover, "created_at": state["created_at"], "updated_at": state["updated_at"],
        "budget": state["budget"], "usage": state["usage"], "remaining": remaining(state),
        "initial_fetch_plan": state["initial_fetch_plan"], **previews, "counts": counts, "pagination": pagination,
        "detail_note": DETAIL_NOTE, "artifacts": artifacts(session), "execution": EXECUTION,
        "budget_unit": BUDGET_UNIT, "evidence_note": EVIDENCE_NOTE,
        "summary": state.get("summary"), "limitations": state.get("limitations"),
        "finished_at": state.get("finished_at"),
    }


def section_page(session: Session, section: str, offset: int, limit: int) -> dict[str, Any]:
    if section not in SECTIONS:
        raise InvalidInputError(f"section must be one of {', '.join(SECTIONS)}")
    records = section_records(session, section)
    items: list[dict[str, Any]] = []
    size = 0
    for index, record in enumerate(records[offset:offset + limit], start=offset):
        text = json.dumps(record, ensure_ascii=False)
        if size + len(text) > PAGE_CHARS:
            if items:
                break
            record = {"oversized_entry": True, "state_file": str(session.directory / "state.json"),
                      "entry_index": index, "note": "This entry is too large for one response; read it from the file."}
            text = json.dumps(record)
        items.append(record)
        size += len(text)
    nxt = offset + len(items)
    return {"research_id": session.id, "section": section, "items": items, "total": len(records), "offset": offset,
            "next_offset": nxt if nxt < len(records) else None}


def list_sessions(app: App, offset: int, limit: int) -> dict[str, Any]:
    """Every session found under the default root or in the location registry."""
    root = store.default_root(app)
    rows: dict[str, dict[str, Any]] = {}
    if root.is_dir():
        for folder in sorted(root.glob("r-*")):
            if (folder / "state.json").exists() or os.path.islink(folder / "state.json"):
                rows[folder.name] = {"research_id": folder.name, "path": str(folder)}
    for rid, entry in store.registered(app).items():
        path = entry.get("path")
        if rid in rows:
            if path and Path(path) != Path(rows[rid]["path"]) and (Path(path) / "state.json").exists():
                rows[rid]["alternate_path"] = path
        else:
            rows[rid] = {"research_id": rid, "path": path}
    out = []
    for rid in sorted(rows, key=lambda r: rows[r]["research_id"]):
        row = rows[rid]
        try:
            state, _ = store.load_state(Path(row["path"]))
            row.update(location_status="conflict" if "alternate_path" in row else "ok", status=state["status"],
                       brief=state["brief"][:200], created_at=state["created_at"], updated_at=state["updated_at"])
        except NotFoundError:
            row["location_status"] = "missing"
        except BookmarkResearchError as exc:
            row.update(location_status="invalid", error=exc.message)
        out.append(row)
    out.sort(key=lambda r: (r.get("created_at") or "", r["research_id"]), reverse=True)
    page = out[offset:offset + limit]
    nxt = offset + len(page)
    return {"directory": str(root), "sessions": page, "total": len(out), "next_offset": nxt if nxt < len(out) else None}


def inventory_page(session: Session, inventory_ids: list[str] | None, offset: int, limit: int) -> dict[str, Any]:
    manifest = session.inventory()
    selected = session.state["source_scope"]["selected_inventory_ids"]
    entries = {e["id"]: e for e in manifest["entries"]}
    if inventory_ids is not None:
        if not 1 <= len(inventory_ids) <= 100 or len(set(inventory_ids)) != len(inventory_ids):
            raise InvalidInputError("inventory_ids must contain 1 to 100 IDs per read")
        chosen = set(selected)
        unknown = [i for i in inventory_ids if i not in chosen]
        if unknown:
            raise NotFoundError(f"Unknown inventory item: {', '.join(unknown[:5])}")
        ids = inventory_ids
    else:
        ids = selected
    page_ids = ids[offset:offset + limit]
    nxt = offset + len(page_ids)
    return {"research_id": session.id, "available": True,
            "source_scope": inventory.preview(session.state["source_scope"], str(session.directory / "context.json")),
            "scope_total": len(selected), "manifest_path": str(session.directory / "inventory.json"),
            "items": [copy.deepcopy(entries[i]) for i in page_ids], "inventory_ids": page_ids, "offset": offset,
            "total": len(ids), "next_offset": nxt if nxt < len(ids) else None}


def source_page(session: Session, source_id: str, offset: int, limit: int) -> dict[str, Any]:
    """A page of a source's saved text, after hash verification (pages concatenate to the exact text)."""
    source = citations.source_by_id(session.state, source_id)
    text = bodies.load(session, source, require_extracted=False).text if source.get("body_file") else ""
    chunk = text[offset:offset + limit]
    nxt = offset + len(chunk)
    return {"research_id": session.id, "source": shape("sources", source), "offset": offset, "text": chunk,
            "total_characters": len(text), "next_offset": nxt if nxt < len(text) else None}
