"""Reading the wiki: ``wiki_get`` (a verified revision with its validation), ``wiki_list`` and ``wiki_search``."""

from __future__ import annotations

import copy
from typing import Any

from bookmark_research.errors import BookmarkResearchError, NotFoundError, StorageError
from bookmark_research.wiki.evidence import ARTIFACTS, Evidence
from bookmark_research.wiki.store import Wiki
from bookmark_research.wiki.validation import record_issues, validation
from bookmark_research.wiki.write import artifacts


def get_page(app: Any, page_id: str, revision: int | None = None) -> dict[str, Any]:
    """Revision ``revision`` (default: current) of a page, hash-verified, with its validation now."""
    wiki = Wiki.open(app)
    if not wiki.exists:
        raise NotFoundError(f"Unknown Wiki page or revision: no page {page_id} (the wiki is empty)")
    pointer, record = wiki.revision(page_id, revision)
    evidence = Evidence(app)
    issues = record_issues(wiki, record, wiki.load_index(), evidence, pointer["sha256"])
    view = copy.deepcopy(record)
    for snap in view["evidence"]:
        if evidence.check(snap["research_id"], snap["claim_id"]).error is not None:
            continue
        try:
            folder = evidence.folder(snap["research_id"])
        except BookmarkResearchError:
            continue
        for cite in snap["citations"]:
            for key in ARTIFACTS:
                if cite.get(key):
                    cite[key] = str(folder.joinpath(*cite[key].split("/")))
    return {**view, "artifacts": artifacts(wiki, page_id, pointer), "validation": validation(issues)}


def view_path(app: Any, page_id: str) -> dict[str, Any]:
    """Where the current view of ``page_id`` is; a missing view is an error saying how it comes back."""
    from bookmark_research.wiki import render

    wiki = Wiki.open(app)
    pointer = wiki.pointer(page_id)
    rel = render.view_file(page_id)
    if not wiki.is_file(rel):
        raise StorageError(f"{wiki.root / rel}: the current view of {page_id} is missing; `wiki lint` reports it and "
                           "the next write of the page regenerates it")
    return {"page_id": page_id, "revision": pointer["revision"], "view_file": str(wiki.root / rel)}


def list_pages(app: Any, offset: int = 0, limit: int = 20) -> dict[str, Any]:
    wiki = Wiki.open(app)
    pages = wiki.load_index()["pages"] if wiki.exists else {}
    ids = sorted(pages)
    rows = [{"page_id": pid, **pages[pid]} for pid in ids[offset:offset + limit]]
    return {"directory": str(wiki.root), "pages": rows, "total": len(ids),
            "next_offset": offset + limit if offset + limit < len(ids) else None}


def _squash(text: str) -> str:
    return "".join(text.casefold().split())


def search(app: Any, query: str, offset: int = 0, limit: int = 10) -> dict[str, Any]:
    """Ranked pages for ``query``; stale or unreadable pages are excluded and counted."""
    from bookmark_research.wiki import search as whoosh_search

    wiki = Wiki.open(app)
    out: dict[str, Any] = {"query": query, "results": [], "total": 0, "next_offset": None, "excluded_stale_pages": 0,
                           "excluded_page_ids": [], "method": whoosh_search.METHOD, "directory": str(wiki.root)}
    if not wiki.exists or not wiki.path("index.json").exists():
        return out
    index = wiki.load_index()
    pages = index["pages"]
    evidence = Evidence(app)
    records: dict[str, dict[str, Any]] = {}

    def keep(page_id: str) -> dict[str, Any] | None:
        pointer = pages.get(page_id)
        if pointer is None:
            return None
        try:
            record = wiki.read_record(page_id, pointer)
            wiki.check_markdown(pointer)
        except BookmarkResearchError:
            return None
        result = validation(record_issues(wiki, record, index, evidence, pointer["sha256"]))
        if result["status"] == "stale":
            return None
        records[page_id] = record
        return result

    results, total, excluded = whoosh_search.search_pages(wiki, query, keep, offset, limit)
    for row in results:
        page_id = row["page_id"]
        pointer, page = pages[page_id], records[page_id]["page"]
        text = "\n".join([page["title"], *(f"{s['heading']}\n{s['text']}" for s in page["sections"])]).casefold()
        words = query.casefold().split()
        squashed = not all(w in text for w in words) and all(_squash(w) in _squash(text) for w in words)
        row.update({"revision": pointer["revision"], "title": pointer["title"], "kind": pointer["kind"],
                    "updated_at": pointer["updated_at"], "whitespace_insensitive": squashed,
                    "artifacts": artifacts(wiki, page_id, pointer)})
    out.update({"results": results, "total": total,
                "next_offset": offset + limit if offset + limit < total else None,
                "excluded_stale_pages": len(excluded), "excluded_page_ids": excluded[:100]})
    return out
