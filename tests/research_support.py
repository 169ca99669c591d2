"""Helpers shared by the research-session tests."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

PAGE = "Current docs: the service supports search and fetch.\nCalls may return partial excerpts."


def start(core: Any, urls: list[str] | None = None, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"brief": "Find out what the service supports",
                            "questions": [{"id": "q1", "question": "What does it support?"}], **kw}
    if urls is not None:
        args["urls"] = urls
    return core("research_start", **args)


def imported(core: Any, rid: str, op: str, url: str, text: str = PAGE, question: str = "q1",
             **kw: Any) -> dict[str, Any]:
    provenance = kw.pop("provenance", {"kind": "page", "retrieved_at": "2026-11-30T10:00:00Z"})
    return core("research_import_evidence", research_id=rid, operation_id=op, question_id=question, url=url,
                text=text, provenance=provenance, **kw)


def record(core: Any, rid: str, **entry: Any) -> dict[str, Any]:
    return core("research_record", research_id=rid, entry=entry)


def claim(core: Any, rid: str, source: str, quote: str, question: str = "q1", statement: str = "A finding",
          **kw: Any) -> dict[str, Any]:
    return record(core, rid, kind="claim", question_id=question, statement=statement,
                  citations=[{"source_id": source, "quote": quote}], **kw)


def snapshot(directory: str | Path) -> dict[str, str]:
    """SHA-256 of every file in a session folder (to assert byte-identical state after a refusal)."""
    root = Path(directory)
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.endswith(".lock")}
