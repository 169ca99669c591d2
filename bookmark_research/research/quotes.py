"""Quote verification: is a quote really in a saved page, and where?

A quote is accepted when it occurs in the saved text **exactly** (after trimming its ends), or else
after the same *normalisation* is applied to the quote and to the text:

1. Unicode NFKC (full-width forms, ligatures, compatibility spaces; ``…`` becomes ``...``);
2. soft hyphens and zero-width characters (U+00AD, U+180E, U+200B–U+200D, U+2060, U+FEFF) removed;
3. quotation marks unified: ‘ ’ ‚ ‛ ′ ‹ › become ``'``; “ ” „ ‟ ″ « » 〝 〞 「 」 『 』 become ``"``;
4. dashes unified: ‐ ‑ ‒ – — ― − ⁃ ﹘ ﹣ become ``-``; ``⋯`` becomes ``...``; the ideographic full stop
   ``。`` becomes ``.``;
5. every run of whitespace (spaces, tabs, CR/LF, no-break and ideographic spaces) becomes one space, and
   disappears entirely between two CJK characters (a line wrapped inside Chinese or Japanese text);
6. only when the first five do not find the quote, and the saved text has Markdown block structure (the
   extractor saves pages as plain Markdown): line-leading block markers count as whitespace too — heading
   ``#``–``######``, list ``-`` ``*`` ``+`` and ``1.`` ``1)``, quote ``>`` (nested too), the pipes of
   table rows, table separator rows (``| --- | :-: |``) and code fence lines (````` ``` ````` / ``~~~``) —
   so a quote may run across two list items, table cells or quoted lines. In the quote, the same markers
   are dropped at the start of each of its lines (its own start included). The stored span still points
   at the exact saved text, markers between its words included.

Case, letters, digits and all other punctuation must match. The match is stored with its span in the
*saved* text (``start``/``end`` character offsets), the exact text found there and ``match: exact |
normalized``, so every later check is a slice comparison, not a new search.

Speed: the normalised text of a page and its offset map are computed once per body hash and cached (runs
of printable ASCII are copied as one aligned segment; only the rest is looked at character by character).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

REMOVE = frozenset("\u00ad\u180e\u200b\u200c\u200d\u2060\ufeff")
EXTRA = {**{c: "'" for c in "‘’‚‛′‹›"}, **{c: '"' for c in "“”„‟″«»〝〞「」『』"},
         **{c: "-" for c in "‐‑‒–—―−⁃﹘﹣"}, "⋯": "...", "。": "."}
_IDENTITY_RUN = re.compile(r"[\x21-\x7e]+(?: [\x21-\x7e]+)*")
_SPACE_RUN = re.compile(r"\s+")
_WORD = re.compile(r"\w+")
_BLOCK_MARKER = re.compile(  # line-leading Markdown block markers (step 6)
    r"^[ \t]*(?:(?:```|~~~)[^\n]*$"  # a code fence line
    r"|\|[ \t:|-]*-[ \t:|-]*$"  # a table separator row
    r"|(?:>[ \t]?)*(?:#{1,6}(?=[ \t]|$)|[-*+](?=[ \t])|\d{1,9}[.)](?=[ \t]))"  # heading, list item (in a quote)
    r"|(?:>[ \t]?)+)", re.M)  # quote marks
_TABLE_ROW = re.compile(r"^[ \t]*\|[^\n]*$", re.M)
_CELL_PIPE = re.compile(r"(?<!\S)\|(?!\S)")
_CHAR: dict[str, tuple[str, bool]] = {}
CACHE_CHARACTERS = 64_000_000
EXCERPT = 300


def _info(c: str) -> tuple[str, bool]:
    """(normalised form, regular): regular means exactly one non-space, non-combining character out."""
    found = _CHAR.get(c)
    if found is None:
        if c in REMOVE:
            found = ("", False)
        else:
            out = "".join(EXTRA.get(x, x) for x in unicodedata.normalize("NFKC", EXTRA.get(c, c)))
            found = (out, len(out) == 1 and not out.isspace() and not unicodedata.combining(c)
                     and not unicodedata.combining(out))
        if len(_CHAR) < 200_000:
            _CHAR[c] = found
    return found


def is_cjk(c: str) -> bool:
    o = ord(c)
    return (0x2E80 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF or 0xF900 <= o <= 0xFAFF or 0xFF00 <= o <= 0xFFEF
            or 0x20000 <= o <= 0x3FFFF)


class Normalized:
    """A normalised text and the map from its offsets back to the original's."""

    def __init__(self, text: str, markdown: bool = False) -> None:
        self.parts: list[str] = []
        self.n_start: list[int] = []
        self.o_start: list[int] = []
        self.o_len: list[int] = []
        self.aligned: list[bool] = []
        self._n = 0
        self._last = " "  # leading whitespace is dropped
        self._source = text
        pos = 0
        for b_start, b_end in block_markers(text) if markdown else []:
            self._plain(pos, b_start)
            self._blank(b_start, b_end)
            pos = b_end
        self._plain(pos, len(text))
        self.text = "".join(self.parts)
        del self.parts, self._source

    def _plain(self, begin: int, finish: int) -> None:
        pos = begin
        for m in _IDENTITY_RUN.finditer(self._source, begin, finish):
            start, end = m.span()
            if start > pos:
                self._gap(pos, start)
            self._emit(m.group(), start, end - start, True)
            pos = end
        if pos < finish:
            self._gap(pos, finish)

    def _blank(self, start: int, end: int) -> None:
        """Block markers (with the whitespace around them): one space, or none between CJK characters."""
        nxt = self._source[end] if end < len(self._source) else ""
        nxt = _info(nxt)[0][:1] if nxt else ""
        if self._last != " " and nxt and not (is_cjk(self._last) and is_cjk(nxt)):
            self._emit(" ", start, end - start, False)

    def _emit(self, out: str, o_start: int, o_len: int, aligned: bool) -> None:
        if not out:
            return
        if aligned and self.aligned and self.aligned[-1] and self.o_start[-1] + self.o_len[-1] == o_start:
            self.o_len[-1] += o_len  # extend the previous aligned segment
        else:
            self.n_start.append(self._n)
            self.o_start.append(o_start)
            self.o_len.append(o_len)
            self.aligned.append(aligned)
        self.parts.append(out)
        self._n += len(out)
        self._last = out[-1]

    def _gap(self, start: int, end: int) -> None:
        text = self._source
        pos = start
        for m in _SPACE_RUN.finditer(text, start, end):
            if m.start() > pos:
                self._run(pos, m.start())
            nxt = text[m.end()] if m.end() < len(text) else ""
            nxt = _info(nxt)[0][:1] if nxt else ""
            if self._last != " " and not (is_cjk(self._last) and nxt and is_cjk(nxt)):
                self._emit(" ", m.start(), m.end() - m.start(), False)
            pos = m.end()
        if pos < end:
            self._run(pos, end)

    def _run(self, start: int, end: int) -> None:
        """A run without whitespace: one aligned segment when every character maps to one character."""
        chunk = self._source[start:end]
        infos = [_info(c) for c in chunk]
        if all(regular for _, regular in infos):
            self._emit("".join(out for out, _ in infos), start, end - start, True)
            return
        i = 0
        while i < len(chunk):
            out, regular = infos[i]
            if regular:
                j = i
                while j < len(chunk) and infos[j][1]:
                    j += 1
                self._emit("".join(o for o, _ in infos[i:j]), start + i, j - i, True)
                i = j
                continue
            j = i + 1  # a base character with its combining marks is one cluster
            while j < len(chunk) and unicodedata.combining(chunk[j]):
                j += 1
            cluster = chunk[i:j]
            out = "".join(EXTRA.get(x, x) for x in unicodedata.normalize("NFKC", cluster) if x not in REMOVE)
            if out.isspace():
                out = " " if self._last != " " else ""
            self._emit(out, start + i, j - i, False)
            i = j

    def orig_start(self, n: int) -> int:
        i = bisect.bisect_right(self.n_start, n) - 1
        return self.o_start[i] + (n - self.n_start[i] if self.aligned[i] else 0)

    def orig_end(self, n_end: int) -> int:
        i = bisect.bisect_right(self.n_start, n_end - 1) - 1
        if self.aligned[i]:
            return self.o_start[i] + (n_end - self.n_start[i])
        return self.o_start[i] + self.o_len[i]


def block_markers(text: str) -> list[tuple[int, int]]:
    """Spans of line-leading Markdown block markers and table pipes (step 6), each widened over the
    whitespace around it, sorted and merged."""
    spans = [m.span() for m in _BLOCK_MARKER.finditer(text) if m.end() > m.start()]
    for row in _TABLE_ROW.finditer(text):
        spans += [m.span() for m in _CELL_PIPE.finditer(text, row.start(), row.end())]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        while start > 0 and text[start - 1].isspace():
            start -= 1
        while end < len(text) and text[end].isspace():
            end += 1
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def has_block_markers(text: str) -> bool:
    return _BLOCK_MARKER.search(text) is not None or _TABLE_ROW.search(text) is not None


def normalize(text: str, markdown: bool = False) -> str:
    """The normalised form of ``text`` (see the module documentation), ends trimmed; ``markdown`` adds
    step 6 (line-leading block markers and table pipes count as whitespace)."""
    return Normalized(text, markdown).text.strip()


class BodyIndex:
    """A saved body, with its normalised form computed on first need."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._normalized: Normalized | None = None
        self._folded: str | None = None
        self._markdown: Normalized | None | bool = None  # False: the text has no block markers

    @property
    def normalized(self) -> Normalized:
        if self._normalized is None:
            self._normalized = Normalized(self.text)
        return self._normalized

    @property
    def markdown(self) -> Normalized | None:
        """The normalised text with step 6 applied, or ``None`` when the text has no block markers."""
        if self._markdown is None:
            self._markdown = Normalized(self.text, markdown=True) if has_block_markers(self.text) else False
        return self._markdown or None

    @property
    def folded(self) -> str:
        """The normalised text, case-folded to the same length (for the near-miss search only)."""
        if self._folded is None:
            self._folded = fold(self.normalized.text)
        return self._folded

    def size(self) -> int:
        return len(self.text) * (1 + (self._normalized is not None) + (self._folded is not None)
                                 + isinstance(self._markdown, Normalized))


_BODIES: OrderedDict[str, BodyIndex] = OrderedDict()


def body_index(sha256: str, text: str | None = None) -> BodyIndex | None:
    """The cached index of the body with this hash (created from ``text`` when given)."""
    found = _BODIES.get(sha256)
    if found is not None:
        _BODIES.move_to_end(sha256)
        return found
    if text is None:
        return None
    found = _BODIES[sha256] = BodyIndex(text)
    total = sum(b.size() for b in _BODIES.values())
    while total > CACHE_CHARACTERS and len(_BODIES) > 1:
        _, dropped = _BODIES.popitem(last=False)
        total -= dropped.size()
    return found


@dataclass
class Match:
    start: int
    end: int
    found_text: str
    match: str  # exact | normalized

    def as_citation(self) -> dict[str, Any]:
        return {"match": self.match, "span": {"start": self.start, "end": self.end}, "found_text": self.found_text}


def locate(body: BodyIndex, quote: str) -> Match | None:
    """Where ``quote`` stands in the body: exactly, else after normalisation; ``None`` if absent."""
    q = quote.strip()
    if not q:
        return None
    i = body.text.find(q)
    if i >= 0:
        return Match(i, i + len(q), q, "exact")
    nq = normalize(q)
    if not nq:
        return None
    norm = body.normalized
    j = norm.text.find(nq)
    if j < 0:
        norm = body.markdown  # step 6: across list items, table cells, quoted lines
        nq = normalize(q, markdown=True)
        j = norm.text.find(nq) if norm is not None and nq else -1
        if j < 0:
            return None
    assert norm is not None
    start, end = norm.orig_start(j), norm.orig_end(j + len(nq))
    return Match(start, end, body.text[start:end], "normalized")


def recheck(text: str, citation: dict[str, Any]) -> str | None:
    """Whether a stored citation still holds in ``text`` (already hash-checked); a problem or ``None``."""
    span = citation.get("span")
    found = citation.get("found_text")
    if not isinstance(span, dict) or not isinstance(found, str):
        body = BodyIndex(text)
        return None if locate(body, citation.get("quote", "")) else "Quote is absent from the saved text"
    start, end = span.get("start"), span.get("end")
    if not isinstance(start, int) or not isinstance(end, int) or text[start:end] != found:
        return "Citation span no longer holds the quoted text"
    quote = citation.get("quote", "").strip()
    if found == quote:
        return None
    if normalize(quote) and normalize(quote) in normalize(found):
        return None
    if _within_span(text, start, end, normalize(quote, True)):
        return None
    return "Stored quote does not match the text at its span"


def _within_span(text: str, start: int, end: int, nq: str) -> bool:
    """Whether ``nq`` (step-6 normalised) stands between ``start`` and ``end`` of ``text``; the span's
    lines are normalised whole, so markers are read at their real line starts."""
    if not nq:
        return False
    first = text.rfind("\n", 0, start) + 1
    last = text.find("\n", end)
    last = len(text) if last < 0 else last
    region = Normalized(text[first:last], markdown=True)
    j = region.text.find(nq)
    while j >= 0:
        if start <= first + region.orig_start(j) and first + region.orig_end(j + len(nq)) <= end:
            return True
        j = region.text.find(nq, j + 1)
    return False


def _one_line(text: str) -> str:
    return " ".join(text.split())


GRAM = 8  # characters per anchor of the near-miss search
ANCHORS = 48  # anchors sampled evenly from a quote
HITS = 64  # occurrences followed per anchor
LONGEST = 256  # longest anchor tried on a repetitive page
DRIFT = 24  # how far an insertion or deletion in the quote may shift the later anchors
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def fold(text: str) -> str:
    """Lower case without changing the length (so offsets still map; non-ASCII that would grow stays)."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def _hits(text: str, needle: str, limit: int) -> list[int]:
    found: list[int] = []
    pos = text.find(needle)
    while pos >= 0 and len(found) < limit:
        found.append(pos)
        pos = text.find(needle, pos + 1)
    return found


def _vote(votes: dict[int, int], hits: list[int], offset: int) -> None:
    for pos in hits:
        start = max(0, pos - offset)
        votes[start] = votes.get(start, 0) + 1


def _anchor(text: str, q: str, offset: int) -> list[int]:
    """Where the piece of ``q`` at ``offset`` occurs: :data:`GRAM` characters, doubled (up to
    :data:`LONGEST`) while it occurs :data:`HITS` times or more (repetitive pages: tables, lists, logs)."""
    length = GRAM
    while True:
        hits = _hits(text, q[offset:offset + length], HITS)
        if len(hits) < HITS or length >= LONGEST or offset + 2 * length > len(q):
            return hits
        length *= 2


def closest_passage(body: BodyIndex, quote: str) -> str | None:
    """The passage of the body most like ``quote`` (for the error that refuses it), or ``None``.

    Bounded work whatever the page and the quote: up to :data:`ANCHORS` short pieces of the quote (spread
    over it; :data:`GRAM` characters, longer where that is too common) are looked up in the case-folded
    normalised text, at most :data:`HITS` times each, and every hit votes for where the quote would start. The start with the most
    votes within :data:`DRIFT` characters wins (an edit shifts the anchors after it a little). A quote none
    of whose pieces occur falls back to its longest words. No pairwise comparison of quote and page runs,
    so a 4,000-character near miss on a 1 MB page of repeated table rows costs a few C-level scans.
    """
    nq = normalize(quote)
    if not nq:
        return None
    text = body.folded
    q = fold(nq)
    votes: dict[int, int] = {}
    if len(q) >= GRAM:
        last = len(q) - GRAM
        offsets = sorted({round(i * last / (ANCHORS - 1)) for i in range(ANCHORS)}) if last else [0]
        for offset in offsets:
            if q[offset:offset + GRAM].strip():
                _vote(votes, _anchor(text, q, offset), offset)
    if not votes:  # short, or every piece differs: anchor on the quote's longest words
        tokens = sorted({t for t in _WORD.findall(q) if len(t) >= 3 or any(is_cjk(c) for c in t)},
                        key=lambda t: (-len(t), t))
        cjk_grams = [t[i:i + 2] for t in tokens if any(is_cjk(c) for c in t) and len(t) > 2
                     for i in range(len(t) - 1)]
        for token in tokens[:8] + cjk_grams[:8]:
            _vote(votes, _hits(text, token, 25), q.find(token))
    if not votes:
        return None
    starts = sorted(votes)
    prefix = [0]
    for s in starts:
        prefix.append(prefix[-1] + votes[s])

    def score(s: int) -> tuple[int, int, int]:
        near = prefix[bisect.bisect_right(starts, s + DRIFT)] - prefix[bisect.bisect_left(starts, s - DRIFT)]
        return near, votes[s], -s

    best = max(starts, key=score)
    norm = body.normalized
    end = min(len(norm.text), best + len(nq))
    if end <= best:
        return None
    o_start, o_end = norm.orig_start(best), norm.orig_end(end)
    original = body.text
    for _ in range(40):  # widen to whole words
        if o_start == 0 or not original[o_start - 1].isalnum():
            break
        o_start -= 1
    for _ in range(40):
        if o_end >= len(original) or not original[o_end].isalnum():
            break
        o_end += 1
    excerpt = _one_line(original[o_start:min(o_end, o_start + 4 * EXCERPT)])
    return excerpt if len(excerpt) <= EXCERPT else excerpt[:EXCERPT - 1] + "…"
