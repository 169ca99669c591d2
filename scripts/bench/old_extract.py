"""The extractor ``direct`` used before trafilatura (hand-written lxml heuristics), kept unchanged for comparison.

Only the benchmarks import it (``scripts/bench/extraction.py``); the product uses
``bookmark_research.providers.extract``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import lxml.html
from lxml import etree

_DROP = ("script", "style", "noscript", "template", "svg", "nav", "header", "footer", "aside", "form", "iframe",
         "button", "select", "canvas")
_BLOCKS = ("p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "pre", "blockquote", "td", "dd", "dt", "figcaption")
_CHALLENGE = re.compile(r"just a moment|checking your browser|verify you are (a )?human|captcha|cf-challenge|"
                        r"attention required|enable javascript and cookies", re.I)
_LOGIN = re.compile(r"\b(sign|log) ?in\b|\blogin\b|登录|登入", re.I)
_NOT_FOUND = re.compile(r"\b404\b|not found|page (does not|doesn't) exist|页面不存在|找不到", re.I)
MIN_CHARACTERS = 200


@dataclass
class Extracted:
    title: str | None
    text: str
    status: str  # extracted | no_extract | insufficient_content | login_required | access_challenge | not_found


def _clean(text: str) -> str:
    return re.sub(r"[ \t\r\f\v]+", " ", text).strip()


def _text_of(node: etree._Element) -> str:
    parts: list[str] = []
    for el in node.iter(*_BLOCKS):
        if any(parent.tag in _BLOCKS for parent in el.iterancestors()):
            continue  # nested block: its text is already in the outer one
        chunk = _clean(el.text_content())
        if chunk:
            parts.append(chunk)
    if not parts:
        parts = [_clean(node.text_content())]
    return "\n\n".join(p for p in parts if p)


def extract_html(html: str | bytes, http_status: int = 200) -> Extracted:
    try:
        doc = lxml.html.fromstring(html)
    except (etree.ParserError, ValueError):
        return Extracted(None, "", "no_extract")
    title_el = doc.find(".//title")
    og = doc.xpath("//meta[@property='og:title']/@content")
    title = _clean(og[0]) if og else (_clean(title_el.text_content()) if title_el is not None else None)
    has_password = bool(doc.xpath("//input[@type='password']"))
    raw_text = _clean(doc.text_content())
    for el in doc.iter(*_DROP):
        el.drop_tree() if el.getparent() is not None else None
    candidates = doc.xpath("//article | //main | //*[@role='main']") or [doc.find("body") if doc.find("body") is not None
                                                                         else doc]
    best = max(candidates, key=lambda n: len(_text_of(n)))
    text = _text_of(best)
    short = len(text) < MIN_CHARACTERS * 4
    if http_status in (404, 410) or (short and title and _NOT_FOUND.search(title)):
        status = "not_found"
    elif short and _CHALLENGE.search(raw_text[:3000] + " " + (title or "")):
        status = "access_challenge"
    elif has_password and (short or (title and _LOGIN.search(title))):
        status = "login_required"
    elif not text:
        status = "no_extract"
    elif len(text) < MIN_CHARACTERS:
        status = "insufficient_content"
    else:
        status = "extracted"
    return Extracted(title or None, text, status)
