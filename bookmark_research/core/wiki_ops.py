"""The wiki operations: pages compiled from reviewed research claims, with revisions, search and lint."""

from __future__ import annotations

from typing import Any

from bookmark_research.core import wiki_models as m
from bookmark_research.core.app import App
from bookmark_research.core.registry import operation


@operation("wiki_write", "wiki write", m.WikiWriteInput, m.WikiWriteOutput, read_only=False,
           destructive=False)  # a new revision; earlier ones are never rewritten
def wiki_write(app: App, p: m.WikiWriteInput) -> dict[str, Any]:
    """Publish the next revision of a wiki page whose every section cites active, accepted research claims."""
    from bookmark_research.wiki.write import write_page

    return write_page(app, p.page_id, p.page, p.change_note, p.expected_revision, p.reviewed_input_version)


@operation("wiki_acknowledge", "wiki ack", m.WikiAckInput, m.WikiAckOutput, read_only=False, destructive=False)
def wiki_acknowledge(app: App, p: m.WikiAckInput) -> dict[str, Any]:
    """Record that a page was reviewed against its sessions' changed input (a new revision, same content)."""
    from bookmark_research.wiki.write import acknowledge

    return acknowledge(app, p.page_id, p.note, p.expected_revision)


@operation("wiki_get", "wiki get", m.WikiGetInput, m.WikiGetOutput)
def wiki_get(app: App, p: m.WikiGetInput) -> dict[str, Any]:
    """A page revision (default: current), hash-verified, with its evidence and validation status now."""
    from bookmark_research.wiki.read import get_page

    return get_page(app, p.page_id, p.revision)


@operation("wiki_open", "wiki open", m.WikiOpenInput, m.WikiOpenOutput, mcp=False)  # a path for an editor
def wiki_open(app: App, p: m.WikiOpenInput) -> dict[str, Any]:
    """The path of a page's current Markdown view (``pages/<page_id>.md``), refused when that file is missing."""
    from bookmark_research.wiki.read import view_path

    return view_path(app, p.page_id)


@operation("wiki_list", "wiki list", m.WikiListInput, m.WikiListOutput)
def wiki_list(app: App, p: m.WikiListInput) -> dict[str, Any]:
    """Wiki pages sorted by page_id, with their current revision, title, kind and summary."""
    from bookmark_research.wiki.read import list_pages

    return list_pages(app, p.offset, p.limit)


@operation("wiki_search", "wiki search", m.WikiSearchInput, m.WikiSearchOutput)
def wiki_search(app: App, p: m.WikiSearchInput) -> dict[str, Any]:
    """Ranked search of wiki pages (BM25F, stemmed English, CJK n-grams); stale pages excluded and counted."""
    from bookmark_research.wiki.read import search

    return search(app, p.query, p.offset, p.limit)


@operation("wiki_lint", "wiki lint", m.WikiLintInput, m.WikiLintOutput)
def wiki_lint(app: App, p: m.WikiLintInput) -> dict[str, Any]:
    """Check evidence, input freshness, links, revision hashes and rendered Markdown of one page or all."""
    from bookmark_research.errors import NotFoundError
    from bookmark_research.wiki.lint import lint
    from bookmark_research.wiki.store import Wiki

    if p.page_id is not None:  # an unknown page is a not-found error, like wiki_get's, not a lint finding
        wiki = Wiki.open(app)
        if not wiki.exists or p.page_id not in wiki.load_index()["pages"]:
            raise NotFoundError(f"Unknown Wiki page: {p.page_id}")
    return lint(app, p.page_id)
