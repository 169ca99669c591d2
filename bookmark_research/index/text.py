"""Text helpers for search: term splitting, the short-term character index and highlighting."""

from __future__ import annotations

import re

#: Stands for fields boundaries, whitespace and ASCII runs in the character index: no match spans it.
GAP = "\ue000"
_WS = re.compile(r"\s+")
_NOT_INDEXED = re.compile(r"[\x00-\x7f\s]+")

#: Character-per-token FTS5 tokenizer: every letter, digit, mark, punctuation and symbol is a token.
CHAR_TOKENIZER = "unicode61 remove_diacritics 0 categories 'L* N* Co M* P* S*'"
SEARCH_FIELDS = ("title", "url", "note", "tag_text", "folder_path")
#: BM25 column weights for the trigram index's (title, url, note, tag_text).
BM25_WEIGHTS = (10.0, 2.0, 4.0, 3.0)
TRIGRAM_MIN = 3


def char_text(*fields: str | None) -> str:
    """Text for the character index: one token per non-ASCII character (CJK and other scripts).

    ASCII runs, whitespace and field boundaries become a gap token, so a phrase of adjacent
    characters only matches characters that are adjacent in one field. Pure-ASCII text (most
    English bookmarks) produces an empty document and costs nothing to index.
    """
    present = [f for f in fields if f]
    if all(f.isascii() for f in present):
        return ""
    return " ".join(_NOT_INDEXED.sub(GAP, GAP.join(present)))


def url_hash(url: str | None) -> int | None:
    """A 64-bit key of a URL (``None`` for none): distinct-URL counts compare integers, not strings.

    Two different URLs share a key with probability about 2^-64 per pair (about 3e-8 for a source of a
    million distinct URLs).
    """
    if not url:
        return None
    import hashlib  # here: a search never hashes (its process skips loading OpenSSL)

    return int.from_bytes(hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big", signed=True)


def uses_char_index(term: str) -> bool:
    """Short terms made only of non-ASCII, non-space characters are answered by the character index."""
    return not any(c.isascii() or c.isspace() for c in term)


def like_pattern(term: str) -> str:
    """A LIKE pattern matching ``term`` literally as a substring (escape character ``\\``)."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def split_terms(target: str) -> list[str]:
    return [t for t in _WS.split(target.strip()) if t]


def fts_phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def char_phrase(term: str) -> str:
    return '"' + " ".join(term).replace('"', '""') + '"'


def merge_spans(spans: list[tuple[int, int]]) -> list[list[int]]:
    """``(start, end)`` character spans sorted, overlapping or touching ones merged."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def highlight(text: str, terms: list[str], width: int = 80, mark: tuple[str, str] = ("[", "]")) -> str | None:
    """A window of ``text`` around the first term found (case-insensitive), terms marked; None if none."""
    if not text:
        return None
    folded = text.casefold()
    spans: list[tuple[int, int]] = []
    for term in terms:
        needle = term.casefold()
        start = folded.find(needle)
        while start != -1 and len(folded) == len(text):
            spans.append((start, start + len(needle)))
            start = folded.find(needle, start + len(needle))
    if not spans:
        return None
    merged = merge_spans(spans)
    first = merged[0][0]
    lo = max(0, first - width // 3)
    hi = min(len(text), lo + width)
    out, pos = [], lo
    for s, e in merged:
        if s >= hi:
            break
        if s < lo:
            continue
        out.append(text[pos:s] + mark[0] + text[s:e] + mark[1])
        pos = e
    out.append(text[pos:hi])
    return ("…" if lo > 0 else "") + "".join(out) + ("…" if hi < len(text) else "")
