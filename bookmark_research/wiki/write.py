"""Publishing a revision: ``wiki_write`` and ``wiki_acknowledge``.

A write checks the page, re-verifies every cited claim through the research API (active claim,
accepted sources, quote span and hashes) before anything is created, then, holding the cited
sessions' locks (sorted) and the wiki's index lock, checks ``expected_revision`` and the evidence
again and publishes in this order, each file written atomically:

    evidence copies → revision record → revision Markdown → index.json (the publication point)
    → current view pages/<id>.md → index.md → log.md → search index

If anything fails before ``index.json`` is replaced, the previous revision stays current and a retry
with the same ``expected_revision`` succeeds (unreferenced files of the failed attempt may remain).
Files after the publication point are derived: a failure there is reported in ``derived_errors`` and
repaired by the next write of the page (``wiki lint`` shows what is out of date meanwhile).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from bookmark_research import atomic
from bookmark_research.clock import iso
from bookmark_research.errors import BookmarkResearchError, ConflictError, InvalidInputError, StorageError
from bookmark_research.wiki import render
from bookmark_research.wiki.cache import Outlines
from bookmark_research.wiki.evidence import ARTIFACTS, Evidence, cited_research_ids
from bookmark_research.wiki.markdown import not_wikilinks, prose_links
from bookmark_research.wiki.pages import Page, claim_refs, page_dict
from bookmark_research.wiki.store import INDEX, MAX_PAGES, MAX_RECORD_BYTES, Wiki, dump_index, sha256
from bookmark_research.wiki.search import index_digest as search_digest
from bookmark_research.wiki.validation import record_issues

ACK_REFUSED = ("Wiki acknowledgement cannot accept invalid evidence or links; repair them before reviewing "
               "input changes")
REVISION_CHANGED = "Wiki revision changed; read the current page before updating"


def _put(wiki: Wiki, rel: str, data: bytes, sync_dir: bool = True) -> None:
    """Write ``rel`` atomically; ``sync_dir=False`` when the caller fsyncs its folder after more files."""
    try:
        atomic.write_bytes(wiki.path(rel), data, sync_dir=sync_dir)
    except OSError as exc:
        raise StorageError(f"{wiki.root / rel}: cannot write ({exc.strerror or exc})") from None


def _sync_dir(wiki: Wiki, rel: str) -> None:
    try:
        atomic.fsync_dir(wiki.path(rel) if rel else wiki.root)
    except OSError as exc:
        raise StorageError(f"{wiki.root / rel}: cannot sync ({exc.strerror or exc})") from None


def _acknowledgements(previous: dict[str, Any] | None, research_ids: list[str], evidence: Evidence, now: str,
                      note: str, reviewed_input_version: str | None, acknowledge_all: bool) -> list[dict[str, Any]]:
    current = {rid: evidence.freshness(rid).get("current_input_version") for rid in research_ids}
    rows = {a["research_id"]: a for a in (previous or {}).get("acknowledged", [])
            if a["research_id"] in current and a["input_version"] == current[a["research_id"]]}  # carry forward
    if acknowledge_all:
        for rid, version in current.items():
            if isinstance(version, str):
                rows[rid] = {"research_id": rid, "input_version": version, "acknowledged_at": now, "note": note}
    elif reviewed_input_version is not None:
        matched = [rid for rid, version in current.items() if version == reviewed_input_version]
        if not matched:
            raise InvalidInputError("reviewed_input_version does not match the current input version of any cited "
                                    "research task; read the page again or omit it")
        for rid in matched:
            rows[rid] = {"research_id": rid, "input_version": reviewed_input_version, "acknowledged_at": now,
                         "note": note}
    return [rows[rid] for rid in sorted(rows)]


_LINK_REFUSED = ("page.links[{i}]: Wiki links must target an existing different page: {target} (write that page "
                 "first, or link to it from the text as [[{target}]], which lint checks)")


def _check_revision(page_id: str, current: dict[str, Any] | None, expected: int) -> None:
    """Optimistic concurrency: ``expected`` must be the page's current revision (0: a new page)."""
    actual = current["revision"] if current else 0
    if expected == actual:
        return
    if current is None:
        detail = f"page {page_id} does not exist; give expected_revision 0 (or omit it) to create it"
    else:
        detail = f"page {page_id} is at revision {actual}, expected_revision was {expected}"
    raise ConflictError(f"{REVISION_CHANGED}: {detail}")


def _check_prose(page: Page) -> None:
    """Refuse links leaving the wiki, and ``[[...]]`` that would show as text instead of linking."""
    prose_links([section.text for section in page.sections], strict=True)
    for i, section in enumerate(page.sections):
        for written, meant in not_wikilinks(section.text):
            raise InvalidInputError(f"page.sections[{i}].text: {written} is not a page link: page ids are lower-case "
                                    f"letters, digits and hyphens (write [[{meant}]] or escape the brackets)")


class _Titles(Mapping[str, str]):
    """Page titles for ``[[wikilinks]]``: the index's, with the page being written under its new title."""

    def __init__(self, pages: dict[str, Any], page_id: str, title: str) -> None:
        self.pages, self.page_id, self.title = pages, page_id, title

    def __contains__(self, page_id: object) -> bool:
        return page_id == self.page_id or page_id in self.pages

    def __getitem__(self, page_id: str) -> str:
        return self.title if page_id == self.page_id else self.pages[page_id]["title"]

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(self.pages), self.page_id: None})

    def __len__(self) -> int:
        return len(self.pages) + (self.page_id not in self.pages)


def write_page(app: Any, page_id: str, page: Page, change_note: str, expected_revision: int = 0,
               reviewed_input_version: str | None = None, acknowledge_all: bool = False) -> dict[str, Any]:
    """Publish ``page`` as the next revision of ``page_id`` (see the module docstring)."""
    wiki = Wiki.open(app)
    refs = claim_refs(page)
    index = wiki.load_index() if wiki.exists else {"schema_version": 1, "pages": {}}
    current = index["pages"].get(page_id)
    _check_revision(page_id, current, expected_revision)
    if current is None and len(index["pages"]) >= MAX_PAGES:
        raise InvalidInputError("Wiki page limit reached")
    for i, link in enumerate(page.links):
        if link.page_id == page_id or link.page_id not in index["pages"]:
            raise InvalidInputError(_LINK_REFUSED.format(i=i, target=link.page_id))
    _check_prose(page)
    Evidence(app).require(refs)  # fail fast, before the folder exists or a lock is taken

    evidence = Evidence(app)
    research_ids = sorted({rid for rid, _ in refs})
    wiki.create()
    with evidence.locks(research_ids), wiki.lock():
        index = wiki.load_index()
        pages = index["pages"]
        current = pages.get(page_id)
        _check_revision(page_id, current, expected_revision)
        if current is None and len(pages) >= MAX_PAGES:
            raise InvalidInputError("Wiki page limit reached")
        snapshots = evidence.require(refs)
        previous = None
        if current is not None:
            previous = wiki.read_record(page_id, current)
            wiki.check_markdown(current)
            if acknowledge_all and any(i["severity"] == "error"
                                       for i in record_issues(wiki, previous, index, evidence, current["sha256"])):
                raise ConflictError(ACK_REFUSED)
        now = iso()
        acknowledged = _acknowledgements(previous, research_ids, evidence, now, page.review.note,
                                         reviewed_input_version, acknowledge_all)
        resolved = []
        for i, link in enumerate(page.links):
            target = pages.get(link.page_id)
            if target is None or link.page_id == page_id:
                raise InvalidInputError(_LINK_REFUSED.format(i=i, target=link.page_id))
            wiki.read_record(link.page_id, target)
            wiki.check_markdown(target)
            resolved.append({"page_id": link.page_id, "relation": link.relation, "revision": target["revision"],
                             "title": target["title"], "markdown_file": target["markdown_file"]})
        revision = expected_revision + 1
        base = render.revision_file(page_id, revision, uuid.uuid4().hex[:12])
        record = {"schema_version": 1, "page_id": page_id, "revision": revision, "updated_at": now,
                  "change_note": change_note, "previous": current, "page": page_dict(page), "evidence": snapshots,
                  "acknowledged": acknowledged, "resolved_links": resolved, "review_rubric": render.RUBRIC}
        record_bytes = atomic.dump_json(record).encode("utf-8")
        if len(record_bytes) > MAX_RECORD_BYTES:
            raise InvalidInputError(f"Wiki page and citation snapshots exceed {MAX_RECORD_BYTES} bytes; split the topic")
        titles = _Titles(pages, page_id, page.title)
        markdown, markdown_outline = render.page_markdown(record, base + ".md", view=False, titles=titles)
        view, view_outline = render.page_markdown(record, base + ".md", view=True, titles=titles)
        markdown, view = markdown.encode("utf-8"), view.encode("utf-8")
        outlines = {sha256(markdown): markdown_outline, sha256(view): view_outline}
        pointer = {"revision": revision, "record_file": base + ".json", "sha256": sha256(record_bytes),
                   "markdown_file": base + ".md", "markdown_sha256": sha256(markdown), "view_sha256": sha256(view),
                   "title": page.title, "kind": page.kind, "updated_at": now, "claims": len(snapshots),
                   "summary": render.summary(record["page"])}
        new_index = {"schema_version": 1, "pages": {**pages, page_id: pointer}}
        index_bytes = dump_index(new_index, base=pages, changed=page_id).encode("utf-8")
        digests = (search_digest(wiki), sha256(index_bytes))

        _copy_evidence(wiki, evidence, snapshots)
        wiki.ensure_dir(f"revisions/{page_id}")
        _put(wiki, pointer["record_file"], record_bytes, sync_dir=False)
        _put(wiki, pointer["markdown_file"], markdown)  # the folder's fsync makes both renames durable
        _put(wiki, INDEX, index_bytes)  # publication point
        wiki.remember_index(new_index, digests[1])
        derived_errors = _publish_derived(wiki, page_id, view, new_index, record, pointer, digests, outlines,
                                          previous_pages=pages)
    return {"page_id": page_id, **pointer, "status": "written", "directory": str(wiki.root),
            "artifacts": artifacts(wiki, page_id, pointer), "semantic_review": "caller_declared",
            "acknowledged": acknowledged, "catalog": {"index.md": str(wiki.root / "index.md"),
                                                      "log.md": str(wiki.root / "log.md")},
            "derived_errors": derived_errors}


def artifacts(wiki: Wiki, page_id: str, pointer: dict[str, Any]) -> dict[str, str]:
    return {"record_file": str(wiki.root / pointer["record_file"]),
            "markdown_file": str(wiki.root / pointer["markdown_file"]),
            "view_file": str(wiki.root / render.view_file(page_id))}


def _copy_evidence(wiki: Wiki, evidence: Evidence, snapshots: list[dict[str, Any]]) -> None:
    """Keep a copy of every cited artifact inside the wiki, so its links resolve wherever it is opened."""
    done: set[str] = set()
    for snap in snapshots:
        for cite in snap["citations"]:
            for key in ARTIFACTS:
                rel, digest = cite.get(key), (cite.get("artifact_sha256") or {}).get(key)
                if not rel or not digest:
                    continue
                target = render.evidence_copy(snap["research_id"], rel)
                if target in done:
                    continue
                done.add(target)
                try:
                    if sha256(wiki.read_bytes(target)) == digest:
                        continue
                except BookmarkResearchError:
                    pass
                data = evidence.artifact(snap["research_id"], rel, digest)
                wiki.ensure_dir(target.rsplit("/", 1)[0])
                _put(wiki, target, data)


def _publish_derived(wiki: Wiki, page_id: str, view: bytes, index: dict[str, Any], record: dict[str, Any],
                     pointer: dict[str, Any], digests: tuple[str, str], outlines: dict[str, Any],
                     previous_pages: dict[str, Any] | None = None) -> list[str]:
    """Current view, catalogue, log and search index; failures are reported, never undo the write."""
    from bookmark_research.wiki import search

    errors: list[str] = []
    steps = [
        lambda: _put(wiki, render.view_file(page_id), view),
        lambda: _put(wiki, "index.md", render.catalog(index, base=previous_pages, changed=page_id).encode("utf-8"),
                     sync_dir=False),
        lambda: _append_log(wiki, record),
        lambda: _sync_dir(wiki, ""),  # index.md and log.md
        lambda: search.index_page(wiki, *digests, page_id, pointer, record),
        lambda: _remember_outlines(wiki, outlines),
    ]
    for step in steps:
        try:
            step()
        except Exception as exc:  # derived data: the revision is already published
            errors.append(f"{type(exc).__name__}: {exc}"[:500])
    return errors


def _remember_outlines(wiki: Wiki, outlines: dict[str, Any]) -> None:
    store = Outlines(wiki.root)
    try:
        store.put(outlines)
    finally:
        store.close()


def _append_log(wiki: Wiki, record: dict[str, Any]) -> None:
    try:
        existing = wiki.read_bytes("log.md").decode("utf-8")
    except BookmarkResearchError:
        existing = ""
    if not existing.startswith(render.LOG_HEADER):
        existing = render.LOG_HEADER
    _put(wiki, "log.md", (existing + render.log_entry(record)).encode("utf-8"), sync_dir=False)


def acknowledge(app: Any, page_id: str, note: str, expected_revision: int | None = None) -> dict[str, Any]:
    """A new revision of the unchanged page that records the review of its sessions' current input."""
    wiki = Wiki.open(app)
    pointer, record = wiki.revision(page_id, None)
    evidence = Evidence(app)
    if any(i["severity"] == "error" for i in record_issues(wiki, record, wiki.load_index(), evidence, pointer["sha256"])):
        raise ConflictError(ACK_REFUSED)
    data = copy.deepcopy(record["page"])  # the record may be shared by the read cache
    data["review"] = {**data["review"], "note": note}
    page = Page.model_validate(data)
    result = write_page(app, page_id, page, f"Reviewed against the current input: {note}",
                        pointer["revision"] if expected_revision is None else expected_revision, acknowledge_all=True)
    return {**result, "acknowledged_note": note, "unacknowledged": _unacknowledged(evidence, record)}


def _unacknowledged(evidence: Evidence, record: dict[str, Any]) -> list[dict[str, str]]:
    """Cited sessions an acknowledgement cannot cover: their input cannot be checked, so the page stays
    ``needs_review`` (as in the reference) until it cites evidence whose input can be."""
    out = []
    for rid in cited_research_ids(record["evidence"]):
        if not isinstance(evidence.freshness(rid).get("current_input_version"), str):
            out.append({"research_id": rid, "reason": "its bookmark input cannot be checked (source removed or "
                                                      "unreadable); the page stays needs_review"})
    return out
