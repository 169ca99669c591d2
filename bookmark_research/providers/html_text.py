"""Render an extracted article tree as readable plain text with light Markdown structure.

Input is the XML body trafilatura returns (``head``, ``p``, ``list``/``item``, ``table``/``row``/
``cell``, ``quote``, ``code``, ``lb`` and inline ``hi``/``ref``/``del``). Output keeps one block per
paragraph with a blank line between blocks, ``#`` headings, ``-``/``1.`` list items (nested ones
indented) and ``| a | b |`` table rows. Inline text is never escaped or decorated, so a sentence of
the page appears verbatim and a quote of it can be found again.
"""

from __future__ import annotations

import re

from lxml import etree

_INLINE_SPACE = re.compile(r"[ \t\r\f\v\u00a0]+")
_BLOCKS = frozenset({"p", "head", "list", "table", "quote", "code", "div", "item", "row", "cell"})
_BREAKS = frozenset({"p", "head", "quote", "code", "item", "row", "cell", "div"})  # a line break around these


def _inline(el: etree._Element) -> str:
    """The text of ``el`` with line breaks kept and runs of other whitespace collapsed."""
    parts: list[str] = []

    def walk(node: etree._Element) -> None:
        if node.tag == "lb":
            parts.append("\n")
        elif node.text:
            parts.append(node.text)
        for child in node:
            if child.tag in ("list", "table"):
                continue  # nested block rendered by the caller
            if child.tag in _BREAKS:
                parts.append("\n")
            walk(child)
            if child.tag in _BREAKS:
                parts.append("\n")
            if child.tail:
                parts.append(child.tail)

    walk(el)
    lines = (_INLINE_SPACE.sub(" ", line).strip() for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


def _list(el: etree._Element, depth: int) -> list[str]:
    ordered = el.get("rend") == "ol"
    lines: list[str] = []
    number = 0
    for item in el:
        if item.tag != "item":
            continue
        text = _inline(item)
        rend = item.get("rend") or ""
        pad = "  " * depth
        if rend.startswith("dd"):
            marker = "  "  # definition under its term
        else:
            number += 1
            marker = f"{number}. " if ordered else "- "
        if text:
            first, *rest = text.split("\n")
            lines.append(pad + marker + first)
            lines.extend(pad + "  " + line for line in rest)
        for sub in item.iter("list"):
            if sub is not item and next(sub.iterancestors("item")) is item:
                lines.extend(_list(sub, depth + 1))
    return lines


def _rows(el: etree._Element) -> list[etree._Element]:
    return [r for r in el.iter("row") if next(r.iterancestors("table")) is el]


def _is_layout(el: etree._Element) -> bool:
    """A table used for page layout (one column, or cells holding paragraphs) rather than for data."""
    rows = _rows(el)
    return all(len(r) <= 1 for r in rows) or any(
        c.tag in ("p", "head", "list", "table", "quote") for r in rows for cell in r for c in cell)


def _table(el: etree._Element) -> list[str]:
    lines: list[str] = []
    for index, row in enumerate(_rows(el)):
        cells = [" ".join(_inline(c).split()) for c in row if c.tag == "cell"]
        if not any(cells):
            continue
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0 and all(c.get("role") == "head" for c in row if c.tag == "cell"):
            lines.append("|" + " --- |" * len(cells))
    return lines


def _blocks(el: etree._Element, out: list[str]) -> None:
    """Append the rendered blocks under ``el`` to ``out`` (one string per block)."""
    if el.text and el.text.strip():
        out.append(_INLINE_SPACE.sub(" ", el.text).strip())
    for child in el:
        tag = child.tag
        if tag == "head":
            level = (child.get("rend") or "h2")[1:]
            text = " ".join(_inline(child).split())
            if text:
                out.append("#" * (int(level) if level.isdigit() and 1 <= int(level) <= 6 else 2) + " " + text)
        elif tag == "list":
            lines = _list(child, 0)
            if lines:
                out.append("\n".join(lines))
        elif tag == "table" and _is_layout(child):
            for row in _rows(child):
                for cell in row:
                    _blocks(cell, out)
        elif tag == "table":
            lines = _table(child)
            if lines:
                out.append("\n".join(lines))
        elif tag == "quote":
            inner: list[str] = []
            if any(c.tag in _BLOCKS for c in child):
                _blocks(child, inner)
            else:
                inner = [_inline(child)]
            text = "\n\n".join(b for b in inner if b)
            if text:
                out.append("\n".join("> " + line if line else ">" for line in text.split("\n")))
        elif tag == "code":
            text = "".join(child.itertext()).strip("\n")
            if text.strip():
                out.append("```\n" + text + "\n```")
        elif tag in ("div", "body", "article", "section"):
            _blocks(child, out)
        elif tag != "graphic":
            text = _inline(child)
            if text:
                out.append(text)
        if child.tail and child.tail.strip():
            out.append(_INLINE_SPACE.sub(" ", child.tail).strip())


def render(body: etree._Element | None) -> str:
    """Readable text of an extracted body: blocks separated by blank lines."""
    if body is None:
        return ""
    out: list[str] = []
    _blocks(body, out)
    return "\n\n".join(out)
