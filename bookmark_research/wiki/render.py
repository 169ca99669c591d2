"""Markdown for people: a revision's page, its current view, the catalogue ``index.md`` and ``log.md``.

Every generated line escapes the text it carries (titles, headings, notes, statements, quotes), and
section text goes through :func:`~bookmark_research.wiki.markdown.render_author`, so the page's
structure (title, sections, related pages, evidence, update record) is the same whatever authors
write. All links are relative: a revision file links to the revisions it pins and to the wiki's copy
of the saved evidence; the current view ``pages/<id>.md`` links to the other current views.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Mapping
from typing import Any

from bookmark_research.wiki.cache import Outline
from bookmark_research.wiki.markdown import author_parser, escape, outline, render_author

RUBRIC = ("Before publishing, check that each section is supported by the claims it cites, that scope and "
          "uncertainty are stated, that entities are the right ones, and that contrary evidence is mentioned.")
_MARKER = "wiki-evidence-anchor-"
_ORDERED = re.compile(r"^(\d{1,9})([.)])")
_URL = re.compile(r"^https?://[^\s<>]+$")


def paragraph(text: str) -> str:
    """Free text as one escaped Markdown paragraph (whitespace collapsed)."""
    line = escape(" ".join(str(text).split()))
    if line[:1] in ("-", "+", "="):  # would start a list item or underline a heading
        return "\\" + line
    return _ORDERED.sub(r"\1\\\2", line)  # "1." would start an ordered list


def plain_text(markdown: str) -> str:
    """The words of author Markdown without its markup (for summaries and the search index)."""
    words: list[str] = []
    for token in author_parser().parse(markdown):
        for child in token.children or ():
            if child.type in ("text", "code_inline"):
                words.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                words.append(" ")
        if token.type in ("paragraph_close", "heading_close", "fence", "code_block"):
            if token.type in ("fence", "code_block"):
                words.append(token.content)
            words.append(" ")
    return " ".join("".join(words).split())


def summary(page: dict[str, Any]) -> str:
    text = plain_text(page["sections"][0]["text"])
    return text if len(text) <= 120 else text[:119].rstrip() + "…"


def revision_file(page_id: str, revision: int, stem: str) -> str:
    return f"revisions/{page_id}/{revision}-{stem}"


def view_file(page_id: str) -> str:
    return f"pages/{page_id}.md"


def evidence_copy(research_id: str, rel: str) -> str:
    """Where the wiki keeps its copy of a session's saved artifact ``rel``."""
    return f"evidence/{research_id}/{rel}"


def _link(base: str, target: str) -> str:
    return posixpath.relpath(target, base)


def _url(url: str | None) -> str:
    if not url:
        return "no URL"
    return f"<{url}>" if _URL.match(url) else escape(url)


def page_markdown(record: dict[str, Any], markdown_file: str, *, view: bool,
                  titles: Mapping[str, str]) -> tuple[str, Outline]:
    """The Markdown of ``record`` (whose revision file is ``markdown_file``): that revision file
    (``view`` false) or the page's current view (true). ``titles`` names existing pages for wikilinks.

    Also returns the file's outline (heading anchors and links) from parsing it, for the lint cache.
    """
    page, page_id, revision = record["page"], record["page_id"], record["revision"]
    base = "pages" if view else f"revisions/{page_id}"
    own = markdown_file
    lines = [f"# {escape(page['title'])}", "",
             f"Kind: {page['kind']} · Revision: {revision} · {record['updated_at']}", ""]
    review = page["review"]
    note = f" {paragraph(review['note'])}" if review["note"] else ""
    lines += [f"Reviewed by {escape(review['reviewer'])} ({review['method']}).{note}", "",
              "This revision preserves the review as it was published; run `wiki lint` to check later changes "
              "to its evidence and links.", ""]
    if view:
        lines += [f"Current view of revision {revision}: [permanent revision file]({_link(base, own)}) · "
                  f"[Wiki index]({_link(base, 'index.md')})", ""]
    else:
        lines += [f"[Current view]({_link(base, view_file(page_id))}) · [Wiki index]({_link(base, 'index.md')})", ""]
    index_of = {(e["research_id"], e["claim_id"]): k for k, e in enumerate(record["evidence"], 1)}
    for section in page["sections"]:
        text, _links = render_author(section["text"], base, view_file, titles)
        refs = " · ".join(f"[{c['research_id']}/{escape(c['claim_id'])}](#{_MARKER}"
                          f"{index_of[(c['research_id'], c['claim_id'])]})" for c in section["claims"])
        lines += [f"## {escape(section['heading'])}", "", text, "", f"Evidence: {refs}", ""]
    if record["resolved_links"]:
        lines += ["## Related pages", ""]
        for link in record["resolved_links"]:
            if view:
                target = _link(base, view_file(link["page_id"]))
                tail = f"(linked at revision {link['revision']})"
            else:
                target = _link(base, link["markdown_file"])
                tail = f"(revision {link['revision']})"
            lines.append(f"- [{escape(link['title'])}]({target}): {paragraph(link['relation'])} {tail}")
        lines.append("")
    lines += ["## Evidence", ""]
    for k, snap in enumerate(record["evidence"], 1):
        lines += [f"### Evidence {k}", "",
                  f"{snap['research_id']} / {escape(snap['claim_id'])}: {paragraph(snap['statement'] or '')}", ""]
        for cite in snap["citations"]:
            lines += _citation(cite, snap["research_id"], base)
    lines += ["## Update record", "", paragraph(record["change_note"]), ""]
    previous = record.get("previous")
    if previous is not None:
        lines += [f"[Previous revision]({_link(base, previous['markdown_file'])})", ""]
    return _anchor_evidence("\n".join(lines).rstrip("\n") + "\n")


def _citation(cite: dict[str, Any], research_id: str, base: str) -> list[str]:
    retrieved = f" · Retrieved {escape(cite['retrieved_at'])}" if cite.get("retrieved_at") else ""
    lines = [f"Source {escape(str(cite['source_id']))} · {_url(cite.get('url'))}{retrieved}", ""]
    inventory = cite.get("inventory_ids") or []
    lines += [f"Inventory IDs: {escape(', '.join(map(str, inventory)))}" if inventory
              else "Not associated with a frozen inventory", ""]
    provenance = cite.get("provenance")
    kind = provenance.get("kind") if isinstance(provenance, dict) else provenance
    if kind == "external_report" or cite.get("evidence_kind") == "external_report":
        lines += ["Secondary evidence: an external report. Pages cited by that report have not been read by "
                  "importing it.", ""]
    for quote_line in (cite.get("quote") or "").splitlines() or [""]:
        lines.append(f"> {paragraph(quote_line)}".rstrip())
    lines.append("")
    if cite.get("match") == "normalized" and cite.get("found_text"):
        lines += [f"The quote matched after normalisation; the saved text reads: {paragraph(cite['found_text'])}", ""]
    parts = []
    hashes = cite.get("artifact_sha256") or {}
    for key, label in (("body_file", "Saved text"), ("manifest_file", "Manifest"), ("response_file", "Response")):
        rel = cite.get(key)
        if rel and hashes.get(key):
            parts.append(f"[{label}]({_link(base, evidence_copy(research_id, rel))})")
    if cite.get("source_sha256"):
        parts.append(f"SHA-256: `{cite['source_sha256']}`")
    if parts:
        lines += [" · ".join(parts), ""]
    return lines


def _anchor_evidence(markdown: str) -> tuple[str, Outline]:
    """Point the ``Evidence: [...]`` links at the anchors GitHub will give the evidence headings."""
    headings, links = outline(markdown)
    start = max(i for i, (level, text, _) in enumerate(headings) if level == 2 and text == "Evidence")
    anchors = [anchor for level, _, anchor in headings[start + 1:] if level == 3]
    for k in range(len(anchors), 0, -1):  # longest numbers first: marker-1 is a prefix of marker-10
        markdown = markdown.replace(f"(#{_MARKER}{k})", f"(#{anchors[k - 1]})")
    final = {f"#{_MARKER}{k}": f"#{anchor}" for k, anchor in enumerate(anchors, 1)}
    return markdown, ([a for _, _, a in headings], [(final.get(href, href), line) for href, line in links])


_ROWS: dict[int, tuple[dict[str, Any], str, tuple[str, str], str]] = {}  # id(pointer) -> (pointer, id, key, row)


def _row(page_id: str, ptr: dict[str, Any]) -> tuple[tuple[str, str], str]:
    """A page's sort key and catalogue row (pointers are shared by reference and never changed)."""
    known = _ROWS.get(id(ptr))
    if known is None or known[0] is not ptr or known[1] != page_id:
        if len(_ROWS) > 20_000:
            _ROWS.clear()
        row = (f"- [{escape(ptr['title'])}]({view_file(page_id)}) `{page_id}` · r{ptr['revision']} · "
               f"{ptr['updated_at'][:10]} · {ptr['claims']} claims — {escape(ptr['summary'])}")
        known = _ROWS[id(ptr)] = (ptr, page_id, (ptr["title"].casefold(), page_id), row)
    return known[2], known[3]


#: The sorted catalogue rows of the last index catalogued: (its pages dict, rows per kind).
_CATALOG: list[tuple[dict[str, Any], dict[str, list[tuple[tuple[str, str], str]]]]] = []


def catalog(index: dict[str, Any], base: dict[str, Any] | None = None, changed: str | None = None) -> str:
    """``index.md``: every page's current view, topics then entities, sorted by title.

    ``base`` and ``changed`` (optional) say that ``index`` is the pages dict ``base`` with only page
    ``changed`` added or replaced, so the rows sorted for ``base`` are updated instead of sorted again.
    """
    pages = index["pages"]
    last = _CATALOG[0] if _CATALOG else None
    groups: dict[str, list[tuple[tuple[str, str], str]]] | None = None
    if last is not None and base is not None and last[0] is base and changed is not None:
        groups = {kind: list(rows) for kind, rows in last[1].items()}
        if changed in base:
            old = _row(changed, base[changed])
            rows = groups.get(base[changed]["kind"], [])
            at = bisect.bisect_left(rows, old)
            if at < len(rows) and rows[at] == old:
                del rows[at]
            else:
                groups = None  # not the rows of ``base`` after all: sort again
        if groups is not None:
            bisect.insort(groups.setdefault(pages[changed]["kind"], []), _row(changed, pages[changed]))
    if groups is None:
        groups = {"topic": [], "entity": []}
        for page_id, ptr in pages.items():
            groups.setdefault(ptr["kind"], []).append(_row(page_id, ptr))
        for rows in groups.values():
            rows.sort()
    _CATALOG[:] = [(pages, groups)]
    lines = ["# Wiki index", "",
             "Generated from index.json by bookmark-research; do not edit (the next write regenerates it).", ""]
    for kind, heading in (("topic", "Topics"), ("entity", "Entities")):
        rows = groups.get(kind, [])
        lines += [f"## {heading} ({len(rows)})", ""]
        lines += [row for _, row in rows] or ["None yet."]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


LOG_HEADER = "# Wiki log\n\nAppend-only timeline of Wiki writes.\n"


def log_entry(record: dict[str, Any]) -> str:
    research = ", ".join(sorted({e["research_id"] for e in record["evidence"]}))
    return (f"\n## [{record['updated_at'][:10]}] write | {escape(record['page']['title'])} (r{record['revision']})\n\n"
            f"- page_id: `{record['page_id']}`\n- change_note: {paragraph(record['change_note'])}\n"
            f"- research: {research}\n")
