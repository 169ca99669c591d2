"""Main-text extraction from HTML (trafilatura), with the page metadata, and the shells that are not content.

A fetch is only useful evidence when it holds the page's own text: research claims are verified
against it. The article is found by trafilatura (precision favoured, comments left out, tables kept)
and rendered with its structure (:mod:`html_text`). A second pass with recall favoured runs only when
the first finds (almost) nothing, and trafilatura's baseline only when both find nothing.

Around the library, our own checks: login walls, bot challenges, "not found" shells, near-empty and
binary pages get a status other than ``extracted`` so the fetch waterfall tries another provider.
Extraction is bounded (a document is cut after :data:`MAX_ELEMENTS` elements or :data:`MAX_TEXT`
characters of text) and never raises: a page the parser or the library cannot handle gets a status.
"""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import dataclass
from typing import Any

import lxml.html
from lxml import etree
from trafilatura import bare_extraction
from trafilatura.baseline import baseline
from trafilatura.utils import detect_encoding, load_html

from bookmark_research.providers.html_text import render

MIN_CHARACTERS = 200  # less than this is not a page's worth of text
SHORT_RESULT = 400  # a first pass under this many characters counts as having found nothing
MAX_ELEMENTS = 15_000  # documents are cut after this many elements (bounds extraction time)
MAX_TEXT = 1_000_000  # ... or after this many characters of text
_CHALLENGE = re.compile(r"just a moment|checking your browser|verify you are (a )?human|captcha|cf-challenge|"
                        r"attention required|enable javascript and cookies", re.I)
_LOGIN = re.compile(r"\b(sign|log) ?in\b|\blogin\b|登录|登入", re.I)
_NOT_FOUND = re.compile(r"\b404\b|not found|page (does not|doesn't) exist|页面不存在|找不到", re.I)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)
_MAGIC = (b"%PDF-", b"\x89PNG", b"GIF87a", b"GIF89a", b"\xff\xd8\xff", b"PK\x03\x04", b"\x1f\x8b", b"Rar!\x1a",
          b"7z\xbc\xaf", b"OggS\x00", b"ID3\x03", b"ID3\x04", b"wOFF", b"wOF2", b"\x7fELF", b"\x00\x00\x01\x00")
_CONTROL = re.compile(rb"[\x01-\x08\x10-\x1a\x1c-\x1f]")
_UNSAFE_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_SKIP_TEXT = ("script", "style", "template", "noscript")
# WHATWG decoding: labels browsers read as a superset
_ALIASES = {"gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030", "iso-8859-1": "cp1252",
            "latin1": "cp1252", "latin-1": "cp1252", "us-ascii": "cp1252", "ascii": "cp1252", "iso8859-1": "cp1252"}

logging.getLogger("trafilatura").setLevel(logging.CRITICAL)  # it logs per-page warnings for ordinary pages
logging.getLogger("htmldate").setLevel(logging.CRITICAL)


@dataclass
class Extracted:
    """What a page says, how it was judged, and who published it when (each field may be unknown)."""

    title: str | None
    text: str
    # extracted | no_extract | insufficient_content | login_required | access_challenge | not_found |
    # unsupported_content (a binary body)
    status: str
    author: str | None = None
    published_at: str | None = None  # YYYY-MM-DD as the page states it
    site_name: str | None = None
    language: str | None = None
    truncated: bool = False  # the document was cut at the size bound before extraction
    method: str = "none"  # precision | recall | baseline | none

    def metadata(self) -> dict[str, Any]:
        return {"author": self.author, "published_at": self.published_at, "site_name": self.site_name,
                "language": self.language}


def _codec(label: str | bytes | None) -> str | None:
    """A usable Python codec for a charset label, or None for unknown labels."""
    if not label:
        return None
    name = (label.decode("ascii", "ignore") if isinstance(label, bytes) else label).strip().strip("\"'").lower()
    name = _ALIASES.get(name, name)
    try:
        return codecs.lookup(name).name
    except (LookupError, ValueError):
        return None


def looks_binary(body: bytes) -> bool:
    """True for bodies that are not text whatever the Content-Type says (images, PDFs, archives...)."""
    head = body[:4096]
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF8)):
        return False
    if head.startswith(_MAGIC) or b"\x00" in head:
        return True
    # C0 control bytes other than whitespace and ISO-2022 shifts/escape never occur in text encodings
    return len(_CONTROL.findall(head)) > max(8, len(head) // 50)


def decode_body(body: bytes | str, declared: str | None = None) -> str:
    """Text of a fetched body: BOM, then a known declared charset, then ``<meta charset>``, then UTF-8,
    then a detected encoding; unknown labels are ignored. Never raises."""
    if isinstance(body, str):
        return body
    for bom, codec in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                       (codecs.BOM_UTF16_BE, "utf-16-be")):
        if body.startswith(bom):
            return body[len(bom):].decode(codec, errors="replace")
    candidates = [_codec(declared)]
    found = _META_CHARSET.search(body[:4096])
    candidates.append(_codec(found.group(1)) if found else None)
    if candidates[0] in (None, "utf-8") or candidates[1] in (None, "utf-8"):
        candidates.append("utf-8")
    for codec in filter(None, dict.fromkeys(candidates)):
        if codec.startswith("utf-16"):
            continue  # a UTF-16 label on a body without BOM is a mislabelled ASCII-compatible page
        try:
            return body.decode(codec)
        except UnicodeDecodeError:
            continue
    try:
        for guess in detect_encoding(body):
            codec = _codec(guess)
            if codec:
                try:
                    return body.decode(codec)
                except UnicodeDecodeError:
                    continue
    except Exception:  # noqa: BLE001 - detection is a best effort
        pass
    return body.decode(next(filter(None, candidates), "utf-8"), errors="replace")


def _parse(text: str) -> lxml.html.HtmlElement | None:
    text = _UNSAFE_XML.sub("", text)
    if not text.strip():
        return None
    tree = load_html(text)
    if tree is None:  # a fragment, or markup the library's checks refuse: parse it as a body
        tree = load_html(f"<html><body>{text}</body></html>")
    return tree


def _drop_following(node: lxml.html.HtmlElement) -> None:
    """Remove everything after ``node`` in document order (its own subtree stays)."""
    while node.getparent() is not None:
        parent = node.getparent()
        for sibling in list(node.itersiblings()):
            parent.remove(sibling)
        node = parent


def _bound(tree: lxml.html.HtmlElement) -> bool:
    """Cut the document after MAX_ELEMENTS elements or MAX_TEXT characters of text; True when cut."""
    count = chars = 0
    for el in tree.iter():
        count += 1
        if count > MAX_ELEMENTS and el.getparent() is not None:
            _drop_following(el)
            el.getparent().remove(el)
            return True
        if el.tag not in _SKIP_TEXT and el.text:
            chars += len(el.text)
            if chars > MAX_TEXT:
                el.text = el.text[:len(el.text) - (chars - MAX_TEXT)]
                for child in list(el):
                    el.remove(child)
                _drop_following(el)
                return True
        if el.tail:
            chars += len(el.tail)
            if chars > MAX_TEXT:
                el.tail = el.tail[:len(el.tail) - (chars - MAX_TEXT)]
                _drop_following(el)
                return True
    return False


def _clean(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    value = " ".join(value.split())
    return value or None


def _meta(tree: lxml.html.HtmlElement, xpath: str) -> str | None:
    for value in tree.xpath(xpath):
        value = _clean(str(value))
        if value and len(value) <= 200 and "://" not in value:
            return value
    return None


def _language(tree: lxml.html.HtmlElement) -> str | None:
    values = tree.xpath("/html/@lang | /html/@xml:lang | //meta[@http-equiv='content-language' "
                        "or @http-equiv='Content-Language']/@content | //meta[@property='og:locale']/@content")
    for value in values:
        tag = str(value).strip().replace("_", "-").split(",")[0].strip()
        if re.fullmatch(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*", tag):
            return tag
    return None


def _leading_text(node: lxml.html.HtmlElement, limit: int = 3000) -> str:
    """The first ``limit`` characters of visible-ish text (scripts included: challenges hide there)."""
    parts: list[str] = []
    size = 0
    for chunk in node.itertext():
        parts.append(chunk)
        size += len(chunk)
        if size >= limit * 2:
            break
    return " ".join("".join(parts).split())[:limit]


def _run(tree: lxml.html.HtmlElement, url: str | None, *, precision: bool, metadata: bool) -> Any:
    try:
        return bare_extraction(tree, url=url, favor_precision=precision, favor_recall=not precision,
                               include_comments=False, include_tables=True, include_formatting=False,
                               with_metadata=metadata,
                               date_extraction_params={"original_date": True, "extensive_search": False})
    except Exception:  # noqa: BLE001 - a library failure on one page is that page's status
        return None


def _main_text(tree: lxml.html.HtmlElement, url: str | None) -> tuple[str, Any, str]:
    """(text, trafilatura document with metadata or None, method)."""
    first = _run(tree, url, precision=True, metadata=True)
    text = render(first.body) if first is not None else ""
    method = "precision" if text else "none"
    if len(text) < SHORT_RESULT:
        second = _run(tree, url, precision=False, metadata=first is None)
        other = render(second.body) if second is not None else ""
        if len(other) >= 3 * max(len(text), 1):  # the precision pass missed the article, not a short page
            text, method = other, "recall"
            first = first if first is not None else second
    if not text:
        try:
            body, _, _ = baseline(tree)
            text, method = render(body), "baseline"
        except Exception:  # noqa: BLE001
            text = ""
        method = method if text else "none"
    return text, first, method


def extract_html(html: str | bytes, http_status: int = 200, url: str | None = None,
                 charset: str | None = None) -> Extracted:
    """Main text, title and metadata of an HTML page, with its status. Never raises."""
    if isinstance(html, bytes) and looks_binary(html):
        return Extracted(None, "", "unsupported_content")
    try:
        tree = _parse(decode_body(html, charset))
    except Exception:  # noqa: BLE001 - markup the parser cannot read at all
        tree = None
    if tree is None:
        return Extracted(None, "", "not_found" if http_status in (404, 410) else "no_extract")
    title_el = tree.find(".//title")
    og = tree.xpath("//meta[@property='og:title']/@content")
    page_title = _clean(str(og[0])) if og else _clean(title_el.text_content()) if title_el is not None else None
    has_password = bool(tree.xpath("//input[@type='password']"))
    raw_text = _leading_text(tree.find("body") if tree.find("body") is not None else tree)
    language = _language(tree)
    truncated = _bound(tree)
    text, doc, method = _main_text(tree, url)
    title = _clean(getattr(doc, "title", None)) or page_title
    short = len(text) < MIN_CHARACTERS * 4
    if http_status in (404, 410) or (short and page_title and _NOT_FOUND.search(page_title)):
        status = "not_found"
    elif short and _CHALLENGE.search(raw_text + " " + (page_title or "")):
        status = "access_challenge"
    elif has_password and (short or (page_title and _LOGIN.search(page_title))):
        status = "login_required"
    elif not text:
        status = "no_extract"
    elif len(text) < MIN_CHARACTERS:
        status = "insufficient_content"
    else:
        status = "extracted"
    author = _clean(getattr(doc, "author", None)) or _meta(tree, "//meta[@name='author']/@content")
    return Extracted(title, text, status, author=author,
                     published_at=_clean(getattr(doc, "date", None)), site_name=_clean(getattr(doc, "sitename", None)),
                     language=language, truncated=truncated, method=method)


def classify_text(text: str, url: str | None = None) -> Extracted:
    """A provider's page text: HTML documents are extracted like a direct fetch, other text is judged by length."""
    if is_html_document(text):
        return extract_html(text, url=url)
    stripped = text.strip()
    status = "extracted" if len(stripped) >= MIN_CHARACTERS else "insufficient_content" if stripped else "no_extract"
    return Extracted(None, text, status)


_HTML_START = re.compile(r"\A\s*(<!--.*?-->\s*)*(<!doctype\s+html|<html[\s>]|<head[\s>]|<body[\s>])", re.I | re.S)


def is_html_document(text: str) -> bool:
    """True when a provider's "text" is actually an HTML document (to be extracted, not stored raw)."""
    return bool(_HTML_START.match(text[:2048]))
