"""Markdown handling: author text rendered through a parser, escaping, heading anchors, link extraction.

Section text is author Markdown. It is parsed with markdown-it-py (CommonMark + GitHub tables,
strikethrough and task lists, raw HTML off) and written back by mdformat's renderer, so whatever the
author typed comes out as self-contained Markdown: an unclosed code fence is closed, HTML is shown as
text, reference-style links become inline links, and headings are demoted below the section heading.
Nothing in a section can therefore open a block that swallows the rest of the page.

Links in section text may name wiki pages — ``[[page-id]]``, ``[[page-id#anchor|label]]``,
``[label](page-id)`` or ``[label](page-id.md#anchor)`` — or files by their path inside the wiki folder;
they are rewritten to relative links from wherever the page is rendered (a revision file or the
current view), which is what Obsidian, VS Code and GitHub all follow.
"""

from __future__ import annotations

import functools
import posixpath
import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

from bookmark_research.errors import InvalidInputError
from bookmark_research.wiki.pages import PAGE_ID_RE

_SCHEME = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|//)")
_WIKILINK = re.compile(r"\[\[([a-z0-9][a-z0-9-]{0,79})(#[^|\]\n]{1,200})?(?:\|([^\]\n]{1,300}))?\]\]")
_ESCAPE = re.compile(r"([\\`*_\[\]<>#|~&!])")


def escape(text: str) -> str:
    """Plain text (a title, a heading) as Markdown inline text that renders to exactly that text."""
    return _ESCAPE.sub(r"\\\1", text)


# --- parsers ---------------------------------------------------------------------------------------


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    if not state.src.startswith("[[", state.pos):
        return False
    match = _WIKILINK.match(state.src, state.pos)
    if match is None:
        return False
    if not silent:
        target, anchor, label = match.group(1), match.group(2) or "", match.group(3)
        if anchor:  # "#When not to use" (Obsidian writes the heading's text) or "#when-not-to-use"
            anchor = "#" + slug_base(unquote(anchor[1:]).strip())
        token = state.push("link_open", "a", 1)
        token.attrs = {"href": target + anchor}
        token.meta = {"wikilink": True}
        text = state.push("text", "", 0)
        text.content = (label or "").strip() or target
        if not (label or "").strip():
            text.meta = {"wikilink_default": target}
        state.push("link_close", "a", -1)
    state.pos = match.end()
    return True


@functools.lru_cache(maxsize=1)
def author_parser() -> MarkdownIt:
    from mdformat.plugins import PARSER_EXTENSIONS

    md = MarkdownIt("commonmark", {"html": False})
    md.options["mdformat"] = {}
    md.options["store_labels"] = True
    md.options["codeformatters"] = {}
    md.options["parser_extension"] = []
    gfm = PARSER_EXTENSIONS["gfm"]
    md.options["parser_extension"].append(gfm)
    gfm.update_mdit(md)
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    return md


@functools.lru_cache(maxsize=1)
def _unjoined_author_parser() -> MarkdownIt:
    """:func:`author_parser` keeping escapes as separate tokens (``\\[`` is not joined into the text)."""
    md = author_parser.__wrapped__()
    md.core.ruler.disable("text_join")
    return md


@functools.lru_cache(maxsize=1)
def reader() -> MarkdownIt:
    """The parser used to read rendered files back (links and heading anchors), as GitHub would."""
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


# --- links -----------------------------------------------------------------------------------------


def classify(href: str) -> tuple[str, str, str]:
    """``(kind, target, anchor)``: kind is ``external``, ``anchor``, ``page`` or ``file``.

    ``page`` targets are page ids; ``file`` targets are paths relative to the wiki folder.
    """
    if _SCHEME.match(href):
        return "external", href, ""
    path, _, anchor = href.partition("#")
    path = unquote(path)
    if not path:
        return "anchor", "", anchor
    stem = path[:-3] if path.endswith(".md") else path
    if "/" not in stem and PAGE_ID_RE.match(stem):
        return "page", stem, anchor
    normal = posixpath.normpath(path)
    if path.startswith("/") or normal == ".." or normal.startswith("../"):
        raise InvalidInputError(f"Section text links outside the wiki folder: {href}")
    return "file", normal, anchor


def render_author(text: str, base: str, page_file: Callable[[str], str], titles: Mapping[str, str],
                  heading_shift: int = 2) -> tuple[str, list[dict[str, str]]]:
    """Author Markdown re-rendered for a file in folder ``base`` (relative to the wiki root).

    ``page_file(page_id)`` is the wiki-relative file a page link points to. Returns the Markdown and
    the prose links found (``{"kind": "page"|"file", "target", "anchor"}``, in order).
    """
    from mdformat.renderer import MDRenderer

    md = author_parser()
    tokens = md.parse(text if text.endswith("\n") else text + "\n")
    found: list[dict[str, str]] = []

    def rewrite(href: str) -> str:
        kind, target, anchor = classify(href)
        if kind in ("external", "anchor"):
            return href
        found.append({"kind": kind, "target": target, "anchor": anchor})
        rel = page_file(target) if kind == "page" else target
        out = posixpath.relpath(rel, base or ".")
        return out + (f"#{anchor}" if anchor else "")

    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            level = min(6, int(token.tag[1]) + heading_shift)
            token.tag, token.markup = f"h{level}", "#" * level
        for child in token.children or ():
            if child.type == "link_open":
                child.meta.pop("label", None)
                if child.info != "auto":
                    child.attrs["href"] = rewrite(str(child.attrs["href"]))
            elif child.type == "image":
                child.meta.pop("label", None)
                child.attrs["src"] = rewrite(str(child.attrs["src"]))
    _title_wikilinks(tokens, titles)
    rendered = MDRenderer().render(tokens, md.options, {})
    return rendered.strip("\n"), found


def _title_wikilinks(tokens: list[Any], titles: Mapping[str, str]) -> None:
    """``[[id]]`` without a label shows the target page's title (when the page exists)."""
    for token in tokens:
        for child in token.children or ():
            target = child.meta.get("wikilink_default") if child.type == "text" and child.meta else None
            if target in titles:
                child.content = titles[target]


# --- heading anchors and links of rendered files ---------------------------------------------------


def slug_base(text: str) -> str:
    """GitHub's heading anchor for ``text`` (before numbering repeats): lower case, punctuation dropped."""
    kept = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch == " ":
            kept.append("-")
        elif ch in "-_" or cat[0] in "LMN" or cat == "Pc":
            kept.append(ch)
    return "".join(kept)


class Slugger:
    """Anchors in document order; a repeated heading gets ``-1``, ``-2``, ... as GitHub numbers them."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def slug(self, text: str) -> str:
        base = slug_base(text)
        slug = base
        while slug in self.seen:
            self.seen[base] += 1
            slug = f"{base}-{self.seen[base]}"
        self.seen.setdefault(slug, 0)
        return slug


def outline(markdown: str) -> tuple[list[tuple[int, str, str]], list[tuple[str, int]]]:
    """Parse rendered Markdown: headings ``(level, text, anchor)`` and links ``(href, line)`` in order.

    The same result as walking :func:`reader`'s full token stream, computed with less work: the block
    structure is parsed whole, but an inline run is parsed only when it can hold what is asked for (a
    heading's text, or a link or image, which needs ``[`` or ``<``), and a run already parsed in this
    process is not parsed again (its result depends only on its text while the document defines no
    link references). Rendered pages repeat most of their inline runs (citations, evidence links).
    """
    env: dict[str, Any] = {}
    tokens = _block_reader().parse(markdown, env)
    memo = None if env.get("references") else _INLINE
    slugger = Slugger()
    headings: list[tuple[int, str, str]] = []
    links: list[tuple[str, int]] = []
    heading_level = 0
    for token in tokens:
        if token.type == "heading_open":
            heading_level = int(token.tag[1])
            continue
        if token.type != "inline":
            heading_level = 0
            continue
        content = token.content
        if heading_level or "[" in content or "<" in content:
            parsed = memo.get(content) if memo is not None else None
            if parsed is None:
                parsed = _parse_inline(content, env)
                if memo is not None and len(content) <= _INLINE_RUN_MAX:
                    if len(memo) >= _INLINE_MAX or _INLINE_SIZE[0] > _INLINE_CHARS_MAX:
                        memo.clear()
                        _INLINE_SIZE[0] = 0
                    memo[content] = parsed
                    _INLINE_SIZE[0] += len(content) + sum(map(len, parsed[1]))
            text, hrefs = parsed
            if heading_level:
                headings.append((heading_level, text, slugger.slug(text)))
            if hrefs:
                line = (token.map[0] + 1) if token.map else 0
                links += [(href, line) for href in hrefs]
        heading_level = 0
    return headings, links


_INLINE: dict[str, tuple[str, tuple[str, ...]]] = {}  # inline run -> (its text, its link targets in order)
_INLINE_MAX = 200_000  # runs remembered at most ...
_INLINE_CHARS_MAX = 16_000_000  # ... and characters (then the memo starts again)
_INLINE_RUN_MAX = 4_000  # longer runs (prose, not the repeated citation lines) are not remembered
_INLINE_SIZE = [0]  # characters held by _INLINE


@functools.lru_cache(maxsize=1)
def _block_reader() -> MarkdownIt:
    """:func:`reader` without its inline pass (done by :func:`_parse_inline` where it matters)."""
    fast = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    fast.core.ruler.disable(["inline", "text_join"])
    return fast


def _parse_inline(content: str, env: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """The text (as a heading's anchor is made from) and the link and image targets of an inline run."""
    md = _block_reader()
    children = md.inline.parse(content, md, env, [])
    text = "".join(c.content for c in children if c.type in ("text", "text_special", "code_inline"))
    hrefs: list[str] = []
    stack = list(children)
    while stack:
        child = stack.pop(0)
        if child.type == "link_open":
            hrefs.append(str(child.attrs.get("href", "")))
        elif child.type == "image":
            hrefs.append(str(child.attrs.get("src", "")))
        if child.children:
            stack[0:0] = child.children
    return text, tuple(hrefs)


_DOUBLE_BRACKETS = re.compile(r"\[\[([^\[\]\n]{1,200})\]\]")


def not_wikilinks(text: str) -> list[tuple[str, str]]:
    """``[[...]]`` in author text that is not a page link (an id must be lower case), outside code:
    ``(what was written, the page id it probably means)``."""
    found = []
    for token in _unjoined_author_parser().parse(text):
        for child in token.children or ():
            if child.type == "text":  # an escaped bracket is a token of its own here, so it never matches
                for match in _DOUBLE_BRACKETS.finditer(child.content):
                    name = match.group(1).partition("|")[0].partition("#")[0].strip()
                    found.append((match.group(0), "-".join(name.lower().split())))
    return found


def prose_links(texts: list[str], strict: bool) -> list[dict[str, str]]:
    """Page and file links in author Markdown (``[[id]]``, ``[x](id)``, ``[x](path)``), in order.

    ``strict`` refuses a link that leaves the wiki folder; otherwise it is returned as a file link.
    """
    found = []
    for text in texts:
        for token in author_parser().parse(text):
            for child in token.children or ():
                href = child.attrs.get("href") if child.type == "link_open" else \
                    child.attrs.get("src") if child.type == "image" else None
                if not href or (child.type == "link_open" and child.info == "auto"):
                    continue
                try:
                    kind, target, anchor = classify(str(href))
                except InvalidInputError:
                    if strict:
                        raise
                    kind, target, anchor = "file", str(href), ""
                if kind in ("page", "file"):
                    found.append({"kind": kind, "target": target, "anchor": anchor})
    return found
