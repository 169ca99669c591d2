"""``source_freshness``: has the indexed input changed since the session froze it? (Evidence is never touched.)"""

from __future__ import annotations

from typing import Any

from bookmark_research.core.app import App
from bookmark_research.errors import BookmarkResearchError
from bookmark_research.research.inventory import overall_input_version, source_input_version


def source_freshness(app: App, state: dict[str, Any], manifest: dict[str, Any]) -> dict[str, Any]:
    frozen = state["source_scope"].get("input_version")
    if manifest.get("index_state") != "last_synchronized":
        return {"frozen_input_version": frozen, "current_input_version": None, "state": "not_applicable",
                "requires_review": False,
                "basis": ("Explicit URL list frozen at research_start; no live source is registered"
                          if manifest.get("index_state") == "provided" else "No indexed input was selected")}
    out: dict[str, Any] = {"frozen_input_version": frozen, "current_input_version": None, "state": "unknown",
                           "requires_review": False,
                           "basis": ("Frozen file hashes compared with the current index (live sources checked "
                                     "against their folders first); the session's scope and evidence are unchanged")}
    try:
        from bookmark_research.index.db import read_snapshot
        from bookmark_research.sources.live import refresh

        conn = app.connect(create=False)
        if conn is None:
            out["error"] = "The bookmark index does not exist any more"
            return out
        states: dict[str, Any] = {}
        files: list[dict[str, Any]] = []
        for sid in state["source_ids"]:
            row = conn.execute("SELECT mode, state FROM sources WHERE source_id=?", (sid,)).fetchone()
            if row is None:
                states[sid] = {"state": "removed", "changed": True}
                continue
            current_state = refresh(app, sid, force=True)["state"] if row[0] == "live" else row[1]
            with read_snapshot(conn):
                version, source_files = source_input_version(conn, sid)
            frozen_version = next((s["input_version"] for s in manifest.get("sources", []) if s["source_id"] == sid),
                                  None)
            states[sid] = {"state": current_state, "changed": version != frozen_version}
            files += [{"source_id": sid, **f} for f in source_files]
        current = overall_input_version(files) if len(files) or not state["source_ids"] else None
        out.update(current_input_version=current, source_states=states)
        removed = [sid for sid, s in states.items() if s["state"] == "removed"]
        if removed:  # still "changed" (what readers test), with which sources are gone
            out.update(state="changed", requires_review=True, removed_source_ids=removed)
        else:
            changed = current != frozen
            out.update(state="changed" if changed else "unchanged", requires_review=changed)
    except BookmarkResearchError as exc:
        out["error"] = exc.message
    return out
