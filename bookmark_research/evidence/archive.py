"""The evidence archive: every fetch's raw response, a manifest and content-addressed page bodies.

Layout under the data directory::

    archive/captures/<UTC timestamp>-<12 hex>/response.json   the provider's raw response, unchanged
    archive/captures/<...>/manifest.json                      provider, request, per-page status, hashes
    archive/pages/<sha256>.txt                                one file per distinct page body

Captures are staged and renamed into place (atomic); bodies are written before the manifest;
old captures are never overwritten. Each saved page is also indexed for :mod:`search`.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bookmark_research import atomic
from bookmark_research.clock import iso
from bookmark_research.core.app import App
from bookmark_research.errors import StorageError
from bookmark_research.evidence.index import index_capture
from bookmark_research.index.db import transaction


@dataclass
class PageCapture:
    """One requested URL as a provider answered it."""

    requested_url: str
    returned_url: str | None = None
    title: str | None = None
    text: str = ""
    extraction_status: str = "extracted"  # extracted, not_found, login_required, access_challenge, ...
    content_kind: str = "provider_extracted_text"
    possibly_truncated: bool = False
    error: str | None = None
    error_kind: str | None = None
    http_status: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # what the page says about itself (extracted metadata); None when unknown
    author: str | None = None
    published_at: str | None = None
    site_name: str | None = None
    language: str | None = None


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


LEFTOVER_AGE_SECONDS = 3600


def archive_dir(app: App) -> Path:
    return app.data_dir / "archive"


def save(app: App, *, provider: str, tool: str, request: dict[str, Any], response: Any,
         pages: list[PageCapture], retrieved_at: str, root: Path | None = None, index: bool = True) -> dict[str, Any]:
    """Store one provider response with its pages; returns the capture summary.

    ``root`` stores the capture in another folder of the same layout (a research session's ``evidence/``);
    ``index=False`` leaves it out of the archive search index.
    """
    root = root or archive_dir(app)
    capture_id = f"{_stamp()}-{secrets.token_hex(6)}"
    try:
        (root / "pages").mkdir(parents=True, exist_ok=True)
        (root / "captures").mkdir(parents=True, exist_ok=True)
        # What an interrupted save left (no lock guards the archive, so only what is an hour old).
        for folder in (root, root / "pages"):
            atomic.remove_leftovers(folder, time.time() - LEFTOVER_AGE_SECONDS)
        staging = atomic.staging_dir(root)
    except OSError as exc:
        raise StorageError(f"{root}: cannot write the evidence archive ({exc.strerror})") from None
    try:
        raw = response if isinstance(response, (bytes, bytearray)) else json.dumps(
            response, ensure_ascii=False, indent=2).encode("utf-8")
        (staging / "response.json").write_bytes(raw)
        entries = []
        for page in pages:
            entry = asdict(page)
            text = entry.pop("text")
            entry["sha256"] = entry["body_file"] = None
            entry["characters"] = len(text)
            if text:
                digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
                body = root / "pages" / f"{digest}.txt"
                if not body.exists() or hashlib.sha256(body.read_bytes()).hexdigest() != digest:
                    atomic.write_bytes(body, text.encode("utf-8"))
                entry.update(sha256=digest, body_file=f"../../pages/{digest}.txt")
            entries.append(entry)
        manifest = {
            "format": "bookmark-research-capture", "schema_version": 1, "capture_id": capture_id,
            "archived_at": iso(),
            "provider": provider, "tool": tool, "retrieved_at": retrieved_at, "request": request,
            "response_file": "response.json", "response_sha256": hashlib.sha256(raw).hexdigest(),
            "page_store": "content_addressed", "completeness": "unknown", "pages": entries,
        }
        (staging / "manifest.json").write_text(atomic.dump_json(manifest), encoding="utf-8")
        target = root / "captures" / capture_id
        atomic.publish_dir(staging, target)  # fsynced, then renamed into place; never overwrites
    except OSError as exc:
        atomic.remove_tree(staging)
        raise StorageError(f"{root}: cannot write the evidence archive ({exc.strerror})") from None
    except BaseException:
        atomic.remove_tree(staging)
        raise
    if index:
        conn = app.connect()
        with transaction(conn):
            index_capture(conn, manifest, {e["sha256"]: p.text for e, p in zip(entries, pages) if e["sha256"]},
                          root)
    return {"status": "saved", "capture_id": capture_id, "directory": str(target),
            "manifest_path": str(target / "manifest.json"), "response_path": str(target / "response.json"),
            "pages": [{"requested_url": e["requested_url"], "sha256": e["sha256"], "characters": e["characters"],
                       "body_path": str(root / "pages" / f"{e['sha256']}.txt") if e["sha256"] else None}
                      for e in entries]}
