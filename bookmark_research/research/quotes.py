"""Quote verification: is a quote really in a saved page, and where?

A quote is accepted when it occurs in the saved text **exactly** (after trimming its ends), or else
after the same *normalisation* is applied to the quote and to the text:

1. Unicode NFKC (full-width forms, ligatures, compatibility spaces; ``…`` becomes ``...``);
2. soft hyphens and zero-width characters (U+00AD, U+180E, U+200B–U+200D, U+2060, U+FEFF) removed;
3. quotation marks unified: ‘ ’ ‚ ‛ ′ ‹ › become ``'``; “ ” „ ‟ ″ « » 〝 〞 「 」 『 』 become ``"``;
4. dashes unified: ‐ ‑ ‒ – — ― − ⁃ ﹘ ﹣ become ``-``; ``⋯`` becomes ``...``; the ideographic full stop
   ``。`` becomes ``.``;
5. every run of whitespace (spaces, tabs, CR/LF, no-break and ideographic spaces) becomes one space, and
   disappears entirely between two CJK characters (a line wrapped inside Chinese or Japanese text).

Case, letters, digits and all other punctuation must match. The match is stored with its span in the
*saved* text (``start``/``end`` character offsets), the exact text found there and ``match: exact |
normalized``, so every later check is a slice comparison, not a new search.

Speed: the normalised text of a page and its offset map are computed once per body hash and cached (runs
of printable ASCII are copied as one aligned segment; only the rest is looked at character by character).
"""

from __future__ import annotations

import bisect
import difflib
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

    def __init__(self, text: str) -> None:
        self.parts: list[str] = []
        self.n_start: list[int] = []
        self.o_start: list[int] = []
        self.o_len: list[int] = []
        self.aligned: list[bool] = []
        self._n = 0
        self._last = " "  # leading whitespace is dropped
        self._source = text
        pos = 0
        for m in _IDENTITY_RUN.finditer(text):
            start, end = m.span()
            if start > pos:
                self._gap(pos, start)
            self._emit(m.group(), start, end - start, True)
            pos = end
        if pos < len(text):
            self._gap(pos, len(text))
        self.text = "".join(self.parts)
        del self.parts, self._source

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


def normalize(text: str) -> str:
    """The normalised form of ``text`` (see the module documentation), ends trimmed."""
    return Normalized(text).text.strip()


class BodyIndex:
    """A saved body, with its normalised form computed on first need."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._normalized: Normalized | None = None

    @property
    def normalized(self) -> Normalized:
        if self._normalized is None:
            self._normalized = Normalized(self.text)
        return self._normalized

    def size(self) -> int:
        return len(self.text) * (2 if self._normalized is not None else 1)


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
        return None
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
    return "Stored quote does not match the text at its span"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def closest_passage(body: BodyIndex, quote: str) -> str | None:
    """The passage of the body most like ``quote`` (for the error that refuses it), or ``None``."""
    nq = normalize(quote)
    if not nq:
        return None
    norm = body.normalized
    folded = nq.lower()
    tokens = sorted({t for t in _WORD.findall(folded) if len(t) >= 3 or any(is_cjk(c) for c in t)},
                    key=lambda t: (-len(t), t))
    cjk_grams = [t[i:i + 2] for t in tokens if any(is_cjk(c) for c in t) and len(t) > 2 for i in range(len(t) - 1)]
    candidates: set[int] = set()
    for token in (tokens[:8] + cjk_grams[:8]):
        offset = folded.find(token)
        for count, m in enumerate(re.finditer(re.escape(token), norm.text, re.IGNORECASE)):
            if count >= 25:
                break
            candidates.add(max(0, m.start() - offset))
    if not candidates:
        return None
    width = len(nq)
    best, best_score = -1, 0.0
    for start in sorted(candidates)[:400]:
        window = norm.text[start:start + width].lower()
        matcher = difflib.SequenceMatcher(None, folded, window, autojunk=False)
        if matcher.real_quick_ratio() <= best_score or matcher.quick_ratio() <= best_score:
            continue
        score = matcher.ratio()
        if score > best_score:
            best, best_score = start, score
    if best < 0:
        return None
    end = min(len(norm.text), best + width)
    o_start, o_end = norm.orig_start(best), norm.orig_end(end)
    text = body.text
    for _ in range(40):  # widen to whole words
        if o_start == 0 or not text[o_start - 1].isalnum():
            break
        o_start -= 1
    for _ in range(40):
        if o_end >= len(text) or not text[o_end].isalnum():
            break
        o_end += 1
    excerpt = _one_line(text[o_start:o_end])
    return excerpt if len(excerpt) <= EXCERPT else excerpt[:EXCERPT - 1] + "…"
