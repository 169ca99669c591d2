"""Evidence sources of a session: host imports, and the shared shape of every source record.

A source (``s1``, ``s2``, ...) is one saved text (or one failed read) with where it came from: provider,
retrieval time, requested and canonical URL, SHA-256 of the saved text, its files inside the session
(``body_file``, ``manifest_file``, ``response_file``), the inventory entries and bookmark refs it answers,
and the content review. Imports cost no budget and are idempotent by ``operation_id``.
"""

from __future__ import annotations

import json
from typing import Any

from bookmark_research import atomic
from bookmark_research.clock import iso
from bookmark_research.core.app import App
from bookmark_research.errors import InvalidInputError, NotFoundError
from bookmark_research.providers.urls import canonical_url, check_url
from bookmark_research.research import operations, store
from bookmark_research.research.ids import sha256_text
from bookmark_research.research.inventory import Links
from bookmark_research.research.store import Session

PROVENANCE_KINDS = ("page", "archived_page", "local_document", "external_report")
_LINKS: dict[tuple[str, str], Links] = {}
REVIEW_NEXT = ("Read the saved text with research_source (terminal: research source ID SOURCE), then record a "
               "source_review (accepted, rejected or uncertain) before relying on it.")


def links(session: Session) -> Links:
    """URL → inventory links of this session's selected entries (cached per inventory hash)."""
    manifest = session.inventory()
    key = (session.state["inventory_manifest_sha256"], session.state["research_id"])
    if key not in _LINKS:
        if len(_LINKS) > 8:
            _LINKS.clear()
        _LINKS[key] = Links(manifest, session.state["source_scope"]["selected_inventory_ids"])
    return _LINKS[key]


def base_source(question_id: str, operation_id: str, url: str, **fields: Any) -> dict[str, Any]:
    record = {"id": None, "question_id": question_id, "operation_id": operation_id, "url": url,
              "canonical_url": canonical_url(url) if url.startswith(("http://", "https://")) else None,
              "provider": None, "retrieved_at": None, "title": None, "extraction_status": "extracted",
              "evidence_kind": "page", "content_kind": "page_text", "completeness": "unknown",
              "possibly_truncated": False, "published_at": None, "crawled_at": None, "sha256": None,
              "characters": 0, "body_file": None, "manifest_file": None, "response_file": None,
              "review": {"verdict": "unreviewed", "text": None}, "inventory_ids": [], "bookmark_refs": [],
              "instance_ids": []}
    record.update(fields)
    return record


def failure_reason(extraction_status: str | None, http_status: int | None) -> str:
    """Why a read gave no usable text when no error was raised: ``not_found (HTTP 404)``, ``login_wall``."""
    return f"{extraction_status or 'unknown'}" + (f" (HTTP {http_status})" if http_status else "")


def source_failure(source: dict[str, Any]) -> str | None:
    """Why a source has no usable text (its error, else its extraction status), or ``None`` when it has."""
    if source.get("error"):
        return str(source["error"])
    if source.get("extraction_status") not in (None, "extracted"):
        return failure_reason(source.get("extraction_status"), source.get("http_status"))
    return None


def link(session: Session, record: dict[str, Any], inventory_ids: list[str] | None = None) -> dict[str, Any]:
    """Attach inventory ids (given, or found by URL), their bookmark refs and instance ids."""
    found = links(session)
    ids = inventory_ids if inventory_ids is not None else found.for_url(record["url"])
    record.update(inventory_ids=ids, bookmark_refs=found.bookmark_refs(ids), instance_ids=found.instance_ids(ids))
    return record


def _check_import(p: Any) -> tuple[str, dict[str, Any]]:
    provenance = p.provenance.model_dump(exclude_none=True)
    kind = provenance["kind"]
    if len(json.dumps(provenance, ensure_ascii=False)) > 64_000:
        raise InvalidInputError("provenance must be at most 64,000 characters of JSON")
    if kind == "external_report":
        if not p.url.strip() or "\x00" in p.url:
            raise InvalidInputError("url must not be blank")
    elif kind == "local_document" and p.url.startswith("file://"):
        pass
    else:
        check_url(p.url, "url")
    digest = sha256_text(p.text)
    if provenance.get("text_sha256") is not None and provenance["text_sha256"] != digest:
        raise InvalidInputError("Imported text does not match provenance.text_sha256")
    return digest, provenance


def import_evidence(app: App, p: Any) -> dict[str, Any]:
    """A text the host read itself becomes a source (no budget; idempotent by operation_id)."""
    digest, provenance = _check_import(p)
    kind = provenance["kind"]
    parameters = {"question_id": p.question_id, "url": p.url, "text_sha256": digest, "title": p.title,
                  "provenance": provenance, "inventory_ids": p.inventory_ids}

    def validate(session: Session) -> None:
        if not any(q["id"] == p.question_id for q in session.state["questions"]):
            raise NotFoundError(f"Unknown question: {p.question_id}")
        if p.inventory_ids:
            selected = set(session.state["source_scope"]["selected_inventory_ids"])
            unknown = [i for i in p.inventory_ids if i not in selected]
            if unknown:
                raise NotFoundError(f"Unknown inventory item: {', '.join(unknown[:5])}")
            if kind != "external_report" and not set(p.inventory_ids) <= set(links(session).for_url(p.url)):
                raise InvalidInputError("Imported page URL does not match the selected original inventory URL")

    begun = operations.reserve(app, p.research_id, p.operation_id, "import_evidence", parameters, lambda s: {},
                               validate=validate)
    if begun.replay is not None:
        return begun.replay
    folder = begun.directory / "evidence" / f"import-{sha256_text(p.operation_id)[:16]}"
    store.make_dirs(folder)
    imported_at = iso()
    atomic.write_text(folder / "body.txt", p.text)
    atomic.write_json(folder / "response.json", {"kind": "host_evidence_import", "url": p.url, "text": p.text,
                                                 "title": p.title, "provenance": provenance,
                                                 "imported_at": imported_at})

    def sources(session: Session, first: int) -> list[dict[str, Any]]:
        evidence_kind = {"external_report": "external_report", "local_document": "local_document"}.get(kind, "page")
        content_kind = {"external_report": "external_report", "local_document": "local_document"}.get(
            kind, "imported_page_text")
        rel = session.relative(folder)
        record = base_source(p.question_id, p.operation_id, p.url, id=f"s{first}",
                             provider=provenance.get("provider") or "host_import",
                             retrieved_at=provenance.get("retrieved_at"), imported_at=imported_at, title=p.title,
                             evidence_kind=evidence_kind, content_kind=content_kind, possibly_truncated=True,
                             published_at=provenance.get("published_at"), sha256=digest, characters=len(p.text),
                             body_file=f"{rel}/body.txt", manifest_file=f"{rel}/manifest.json",
                             response_file=f"{rel}/response.json", provenance=provenance, archive_reuse=None)
        if kind == "external_report":
            record.update(referenced_inventory_ids=list(p.inventory_ids or []))
        else:
            link(session, record, p.inventory_ids or None)
        atomic.write_json(folder / "manifest.json", {"schema_version": 1, "kind": "host_evidence_import",
                                                     "source": record})
        return [record]

    def build(session: Session, new: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
        return {"status": "ok", "source": new[0], "sources": new, "next_action": REVIEW_NEXT}, "ok"

    return operations.commit(app, begun, build, sources)
