"""Ranked wiki search with Whoosh: BM25F over titles, headings, section text, claims and quotes.

The analyzer splits text into word runs and CJK runs. Words are lower-cased and
stemmed (Porter), so "sessions" finds "session". Chinese, Japanese and Korean text has no
spaces, so a run is indexed as overlapping character bigrams (and single characters); a query run
becomes a phrase of its bigrams, which matches exactly where that substring occurs — "可恢复" finds
"会话可恢复", and "唯一URL" finds "唯一 URL".

The index is derived data in ``<wiki>/.search/``: updated by every write, checked against
``index.json`` on every search (pages that changed are re-indexed), and rebuilt from the records when
it is missing, unreadable or of an older schema. It is never the cause of a failed write.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from whoosh.filedb.filestore import FileStorage
from whoosh import query as wq
from whoosh.analysis import LowercaseFilter, StemFilter, Token, Tokenizer
from whoosh.fields import ID, STORED, TEXT, Schema
from whoosh.lang import stemmer_for_language
from whoosh.query.spans import Span, SpanNear2
from whoosh.scoring import BM25F

from bookmark_research.index.text import merge_spans
from bookmark_research.locks import file_lock
from bookmark_research.wiki import cache
from bookmark_research.wiki.render import plain_text
from bookmark_research.wiki.store import INDEX, Wiki, sha256

SEARCH_SCHEMA = 2
FOLDER = ".search"
LOCK = ".search.lock"
FIELDS = ("title", "headings", "body", "claims")
METHOD = ("Whoosh BM25F over title (boosted), headings, section text, claim statements and quotes; English words "
          "stemmed, Chinese/Japanese/Korean text matched as character bigrams (whitespace-insensitive); every "
          "query word must match; stale pages excluded")

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002fa1f"
_RUNS = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W{_CJK}]+)")


class MixedTokenizer(Tokenizer):
    """Word runs as tokens; CJK runs as character bigrams (plus single characters when indexing)."""

    def __eq__(self, other: object) -> bool:
        return self.__class__ is other.__class__

    def __hash__(self) -> int:
        return hash(self.__class__)

    def __call__(self, value: str, positions: bool = False, chars: bool = False, keeporiginal: bool = False,
                 removestops: bool = True, start_pos: int = 0, start_char: int = 0, tokenize: bool = True,
                 mode: str = "", **kwargs: Any) -> Iterator[Token]:
        t = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        pos = start_pos
        for match in _RUNS.finditer(value):
            text, begin = match.group(0), match.start()
            if match.lastgroup == "word":
                grams = [(0, text)]
            else:
                grams = [(i, text[i:i + 2]) for i in range(len(text) - 1)] or [(0, text)]
                if mode != "query" and len(text) > 1:
                    grams += [(i, ch) for i, ch in enumerate(text)]
            for offset, gram in grams:
                t.text, t.boost, t.stopped = gram, 1.0, False
                if keeporiginal:
                    t.original = gram
                if positions:
                    t.pos = pos + offset
                if chars:
                    t.startchar = start_char + begin + offset
                    t.endchar = t.startchar + len(gram)
                yield t
            pos += 1 if match.lastgroup == "word" else max(len(text) - 1, 1)


class Phrase(wq.Phrase):
    """Whoosh's phrase query (adjacent positions, in order) with a faster exact position check.

    Whoosh checks a phrase by building a span object per position and comparing spans pairwise; here
    the positions are compared as integers. Matches and scores are the same (the score is the
    intersection's, as in Whoosh); ``tests/test_wiki_search.py`` compares both on random text.
    """

    def matcher(self, searcher: Any, context: Any = None) -> Any:
        m = super().matcher(searcher, context)
        if type(m) is SpanNear2.SpanNear2Matcher and (m.slop, m.ordered, m.mindist) == (1, True, 1):
            m = _AdjacentMatcher(m.ms)
        return m


class _AdjacentMatcher(SpanNear2.SpanNear2Matcher):
    """Matches where term ``i`` of the phrase is at position ``p + i`` for some ``p``."""

    def __init__(self, ms: list[Any]) -> None:
        super().__init__(ms, slop=1, ordered=True, mindist=1)

    def _get_spans(self) -> list[Span]:
        ms = self.ms
        starts = ms[0].value_as("positions")
        for i in range(1, len(ms)):
            if not starts:
                return []
            following = set(ms[i].value_as("positions"))
            starts = [p for p in starts if p + i in following]
        return [Span(p, p + len(ms) - 1) for p in sorted(set(starts))]


def analyzer() -> Any:
    return MixedTokenizer() | LowercaseFilter() | StemFilter(lang="en")


def schema() -> Schema:
    text = analyzer()
    return Schema(page_id=ID(stored=True, unique=True, sortable=True), sha=STORED(),
                  title=TEXT(analyzer=text, stored=True, field_boost=3.0),
                  headings=TEXT(analyzer=text, stored=True, field_boost=2.0),
                  body=TEXT(analyzer=text, stored=True),
                  claims=TEXT(analyzer=text, stored=True, field_boost=0.5))


def document(page_id: str, pointer: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    page = record["page"]
    claims = []
    for snap in record["evidence"]:
        claims.append(snap.get("statement") or "")
        claims += [c.get("quote") or "" for c in snap["citations"]]
    return {"page_id": page_id, "sha": pointer["sha256"], "title": page["title"],
            "headings": "\n".join(s["heading"] for s in page["sections"]),
            "body": "\n".join(plain_text(s["text"]) for s in page["sections"]), "claims": "\n".join(claims)}


# --- keeping the index in step with index.json -----------------------------------------------------


def _state(wiki: Wiki) -> dict[str, Any]:
    try:
        return json.loads(wiki.read_bytes(f"{FOLDER}/state.json", 10_000))
    except Exception:
        return {}


def _write_state(folder: Any, build: str, digest: str) -> None:
    from bookmark_research import atomic

    atomic.write_json(folder / "state.json", {"schema": SEARCH_SCHEMA, "build": build, "index_sha256": digest})


def index_digest(wiki: Wiki) -> str:
    """SHA-256 of ``index.json`` ("" when there is none)."""
    try:
        return wiki.index_digest()
    except Exception:
        return ""


def _storage(folder: Any) -> Any:
    return FileStorage(str(folder))


def _files(folder: Any) -> dict[str, int]:
    """Sizes of the index's files. Segment files are memory-mapped and never change once written, so a
    file that shrank was damaged from outside: the searcher is reopened (never read past the new end,
    which would kill the process with SIGBUS) and the damage then surfaces as an error and a rebuild."""
    try:
        return {e.name: e.stat().st_size for e in os.scandir(folder) if e.is_file()}
    except OSError:
        return {}


def tiered_merge(writer: Any, segments: list[Any]) -> list[Any]:
    """Merge policy: segments are grouped by size (1-9 documents, 10-99, ...); when ten share a group
    they are merged into one. Each document is rewritten about once per power of ten, so a write's
    cost stays small on average and the index keeps a few segments per size."""
    from whoosh.reading import SegmentReader

    groups: dict[int, list[Any]] = {}
    for segment in segments:
        groups.setdefault(len(str(max(1, segment.doc_count_all()))), []).append(segment)
    keep = []
    for group in groups.values():
        if len(group) >= 10:
            for segment in group:
                writer.add_reader(SegmentReader(writer.storage, writer.schema, segment))
        else:
            keep += group
    return keep


#: Open indexes per wiki folder: (build id, index, searcher, file sizes), reused while that build is on disk.
_OPEN: dict[str, tuple[str, Any, Any, dict[str, int]]] = {}
_MAX_OPEN = 4


def _open(wiki: Wiki, state: dict[str, Any]) -> Any | None:
    """The Whoosh index if it exists, is readable and of the current schema; else None."""
    if state.get("schema") != SEARCH_SCHEMA or not state.get("build"):
        return None
    key = str(wiki.root)
    cached = _OPEN.get(key)
    folder = wiki.path(FOLDER)
    if cached is not None and cached[0] == state["build"]:
        now = _files(folder)
        if all(now.get(name, size) >= size for name, size in cached[3].items()):
            return cached[1]
    _forget(wiki)
    try:
        files = _files(folder)
        ix = _storage(folder).open_index()
        searcher = ix.searcher(weighting=BM25F())
        searcher.doc_count()
    except Exception:
        return None
    while len(_OPEN) >= _MAX_OPEN:  # keep a few wikis open (a server normally has one)
        _close(_OPEN.pop(next(iter(_OPEN))))
    _OPEN[key] = (state["build"], ix, searcher, files)
    return ix


def _close(entry: tuple[str, Any, Any, dict[str, int]]) -> None:
    try:
        entry[2].close()
    except Exception:
        pass


def _forget(wiki: Wiki) -> None:
    cached = _OPEN.pop(str(wiki.root), None)
    if cached is not None:
        _close(cached)


@atexit.register
def _close_all() -> None:
    while _OPEN:
        _close(_OPEN.popitem()[1])


def _searcher(wiki: Wiki) -> Any:
    build, ix, searcher, files = _OPEN[str(wiki.root)]
    if not searcher.up_to_date():
        files = _files(wiki.path(FOLDER))
        # A fresh searcher, not ``searcher.refresh()``: Whoosh's refresh reuses a segment's reader by
        # segment id alone, so it misses deletions made since (an updated page's old words still match).
        _close((build, ix, searcher, files))
        searcher = ix.searcher(weighting=BM25F())
        _OPEN[str(wiki.root)] = (build, ix, searcher, files)
    return searcher


def rebuild(wiki: Wiki) -> Any:
    """A new index from every readable current record, swapped in place of the old one."""
    _forget(wiki)
    build = uuid.uuid4().hex[:12]
    staging = wiki.path(f".search-{build}")
    staging.mkdir(mode=0o700)
    try:
        digest = index_digest(wiki)
        pages = wiki.load_index()["pages"]
        ix = _storage(staging).create_index(schema())
        writer = ix.writer()
        for page_id in sorted(pages):
            try:
                record = wiki.read_record(page_id, pages[page_id])
            except Exception:
                continue  # unreadable pages are excluded from search anyway
            writer.add_document(**document(page_id, pages[page_id], record))
        writer.commit(optimize=True)
        _write_state(staging, build, digest)
        target = wiki.path(FOLDER)
        old = wiki.path(f".search-old-{build}")
        if target.exists():
            os.rename(target, old)
        os.rename(staging, target)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return _open(wiki, _state(wiki))


def _sync(wiki: Wiki, ix: Any, state: dict[str, Any]) -> None:
    """Re-index the pages whose record changed since the index last matched ``index.json``."""
    digest = index_digest(wiki)
    pages = wiki.load_index()["pages"]
    with ix.searcher() as searcher:
        indexed = {f["page_id"]: f["sha"] for f in searcher.all_stored_fields()}
    writer = ix.writer()
    for page_id in set(indexed) - set(pages):
        writer.delete_by_term("page_id", page_id)
    for page_id, pointer in pages.items():
        if indexed.get(page_id) != pointer["sha256"]:
            try:
                writer.update_document(**document(page_id, pointer, wiki.read_record(page_id, pointer)))
            except Exception:
                writer.delete_by_term("page_id", page_id)
    writer.commit(mergetype=tiered_merge)
    _write_state(wiki.path(FOLDER), state["build"], digest)


def current_searcher(wiki: Wiki) -> Any:
    """A searcher over the index, brought up to date with ``index.json`` first (rebuilt if it must be)."""
    with file_lock(wiki.path(LOCK), busy_message="the wiki search index is being rebuilt; retry shortly"):
        state = _state(wiki)
        ix = _open(wiki, state)
        if ix is None:
            rebuild(wiki)
        elif state.get("index_sha256") != index_digest(wiki):
            try:
                _sync(wiki, ix, state)
            except Exception:
                rebuild(wiki)
        return _searcher(wiki)


def index_page(wiki: Wiki, old_digest: str, new_digest: str, page_id: str, pointer: dict[str, Any],
               record: dict[str, Any]) -> None:
    """After a write: update the page's document. A new wiki gets its index here; a missing or broken
    index of an existing wiki is left to the next search (which rebuilds it)."""
    with file_lock(wiki.path(LOCK), timeout=2.0):
        state = _state(wiki)
        ix = _open(wiki, state)
        if ix is None:
            if old_digest == "" and not wiki.path(FOLDER).exists():
                rebuild(wiki)  # the first page of a new wiki
            return
        writer = ix.writer()
        if pointer["revision"] == 1:
            writer.add_document(**document(page_id, pointer, record))  # a new page: nothing to replace
        else:
            writer.update_document(**document(page_id, pointer, record))
        writer.commit(mergetype=tiered_merge)
        if state.get("index_sha256") == old_digest:
            _write_state(wiki.path(FOLDER), state["build"], new_digest)


# --- querying --------------------------------------------------------------------------------------


def build_query(text: str) -> Any | None:
    """Every whitespace-separated word must match in some field; CJK runs match as phrases."""
    ana = analyzer()
    words = []
    for word in text.split():
        tokens = [t.text for t in ana(word, mode="query")]
        if not tokens:
            continue
        if len(tokens) == 1:
            words.append(wq.Or([wq.Term(f, tokens[0]) for f in FIELDS]))
        else:
            words.append(wq.Or([Phrase(f, tokens) for f in FIELDS]))
    if not words:
        return None
    return words[0] if len(words) == 1 else wq.And(words)


def search_pages(wiki: Wiki, text: str, keep: Callable[[str], dict[str, Any] | None], offset: int,
                 limit: int) -> tuple[list[dict[str, Any]], int, list[str]]:
    """Pages matching ``text``, best first (ties by page_id), filtered by ``keep``.

    ``keep(page_id)`` returns the page's validation, or None to exclude it (stale or unreadable); it is
    asked for every matching page, so totals and exclusions are exact. Only the requested window gets
    snippets. Returns ``(results, total kept, excluded ids)``;
    each result holds ``page_id``, ``score``, ``snippet`` and ``validation``.
    """
    q = build_query(text)
    if q is None:
        return [], 0, []
    terms = highlight_terms(text)
    try:
        return _run(current_searcher(wiki), q, terms, keep, offset, limit)
    except Exception:
        with file_lock(wiki.path(LOCK)):
            rebuild(wiki)
        return _run(_searcher(wiki), q, terms, keep, offset, limit)


def _run(searcher: Any, q: Any, terms: list[str], keep: Callable[[str], dict[str, Any] | None], offset: int,
         limit: int) -> tuple[list[dict[str, Any]], int, list[str]]:
    ids = searcher.reader().column_reader("page_id")
    results = searcher.search(q, limit=None)  # one pass: every match scored (cheaper than counting, then ranking)
    kept: list[tuple[float, str, int, dict[str, Any]]] = []
    excluded: list[str] = []
    for score, docnum in results.top_n:
        page_id = ids[docnum]
        page_id = page_id.decode("utf-8") if isinstance(page_id, bytes) else page_id
        validation = keep(page_id)
        if validation is None:
            excluded.append(page_id)
        else:
            kept.append((-score, page_id, docnum, validation))
    kept.sort(key=lambda k: (k[0], k[1]))
    page = [{"page_id": pid, "score": round(-neg, 4), "snippet": snippet(searcher.stored_fields(docnum), terms),
             "validation": validation} for neg, pid, docnum, validation in kept[offset:offset + limit]]
    excluded.sort()
    return page, len(kept), excluded


def highlight_terms(text: str) -> list[str]:
    """What to mark in a snippet: the query's analysed terms (lower-cased stems, CJK bigrams)."""
    ana = analyzer()
    return sorted({t.text for word in text.split() for t in ana(word, mode="query")})


def snippet(fields: dict[str, Any], terms: list[str], width: int = 240) -> str | None:
    """A passage of the first field (body, headings, claims, title) holding a query term, matches ``[marked]``.

    The field is analysed as it was indexed and every word whose analysed form is a query term is marked
    whole, as written: "runtime" marks ``[Runtimes]``, not the stem ``[Runtim]es``."""
    wanted = set(terms)
    if not wanted:
        return None
    # A Snowball English stem keeps the word's first letter, so only words starting like a wanted term
    # are stemmed (stemming every word of a long page before its first match was most of a search).
    starts = {term[:1] for term in wanted}
    stem = _stemmer()
    for field in ("body", "headings", "claims", "title"):
        text = " ".join(str(fields.get(field) or "").split())
        spans: list[tuple[int, int]] = []
        for token in MixedTokenizer()(text, chars=True):
            if spans and token.startchar >= spans[0][0] + width:
                break  # past the passage shown
            word = token.text.lower()
            if word in wanted or (word[:1] in starts and stem(word) in wanted):
                spans.append((token.startchar, token.endchar))
        if spans:
            return _passage(text, spans, width)
    return None


@functools.lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    """The analyzer's English stemmer, with a cache that lasts the process."""
    return functools.lru_cache(maxsize=50_000)(stemmer_for_language("en"))


def _passage(text: str, spans: list[tuple[int, int]], width: int) -> str:
    """``width`` characters of ``text`` from a little before the first span, cut at spaces, spans marked."""
    merged = merge_spans(spans)
    first = merged[0][0]
    lo = max(0, first - width // 3)
    if lo > 0:  # start at a word
        space = text.find(" ", lo, first)
        lo = space + 1 if space != -1 else lo
    hi = min(len(text), lo + width)
    if hi < len(text):  # end at a word, unless the passage has no space to end at
        space = text.rfind(" ", max(lo, merged[0][1]), hi + 1)
        hi = space if space != -1 else hi
    out, pos = [], lo
    for start, end in merged:
        if start >= hi:
            break
        out.append(text[pos:start] + "[" + text[start:end] + "]")
        pos = end
    out.append(text[pos:hi])
    return ("…" if lo > 0 else "") + "".join(out) + ("…" if hi < len(text) else "")
