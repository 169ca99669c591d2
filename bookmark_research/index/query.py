"""SQL of a bookmark search: each target's candidate rows, counted, ranked and paged inside SQLite.

A target's terms are ANDed; each term is a literal, case-insensitive substring of title, URL, note,
tag text or folder path. Terms of 3+ characters use the trigram index, shorter non-ASCII terms the
character index, other short terms (``go``, ``%``) are LIKE filters. A term that also names folders
matches their subtrees (the folder path), found through the folder-title indexes.

Only the page (at most ``limit`` rows) and two counts leave SQLite: one statement materialises the
candidates once, counts rows and distinct URLs, and sorts out the page (BM25, ties in tree order).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from bookmark_research.index.scope import Scope
from bookmark_research.index.text import (
    BM25_WEIGHTS,
    SEARCH_FIELDS,
    TRIGRAM_MIN,
    char_phrase,
    fts_phrase,
    like_pattern,
    uses_char_index,
)

Query = tuple[str, list[Any]]


@dataclass
class Candidates:
    """A SELECT of candidate rows; ``scan``: it reads the scoped rows, without a full-text index."""

    sql: str
    params: list[Any]
    scan: bool = False


#: Columns every candidate query yields: the row, its score (0.0 unranked), and what counting and ordering need.
_CANDIDATE = ("i.pk AS pk, {score} AS score, CASE WHEN i.item_type='bookmark' THEN i.url_hash END AS url_key, "
              "i.section_id AS section_id, i.preorder AS preorder, i.item_id AS item_id")
_WEIGHTS = ", ".join(str(w) for w in BM25_WEIGHTS)
#: Rows inside the subtrees listed in a JSON array of [section_id, first preorder, last preorder].
_IN_RANGES = ("SELECT i.pk AS pk FROM json_each(?) r CROSS JOIN items i WHERE i.source_id = ? "
              "AND i.section_id = json_extract(r.value, '$[0]') "
              "AND i.preorder BETWEEN json_extract(r.value, '$[1]') AND json_extract(r.value, '$[2]')")
ORDERS = {"relevance": "score, section_id, preorder, item_id", "tree": "section_id, preorder, item_id"}


def folder_ranges(conn: sqlite3.Connection, source_id: str, term: str, chars: bool) -> list[tuple[str, int, int]]:
    """Subtrees (section, first, last preorder) under folders whose title contains ``term``; nested ones merged."""
    table, phrase = ("folders_chars", char_phrase(term)) if chars else ("folders_fts", fts_phrase(term))
    rows = conn.execute(
        f"SELECT i.section_id, i.preorder, i.subtree_end FROM {table} f CROSS JOIN items i ON i.pk = f.rowid "
        f"WHERE {table} MATCH ? AND i.source_id = ? ORDER BY i.section_id, i.preorder", (phrase, source_id)).fetchall()
    merged: list[tuple[str, int, int]] = []
    for section_id, preorder, end in rows:
        if preorder == end:
            continue  # an empty folder has no descendants
        if merged and merged[-1][0] == section_id and preorder <= merged[-1][2]:
            continue  # inside a subtree already taken
        merged.append((section_id, preorder + 1, end))
    return merged


def _all_of(conditions: list[str]) -> str:
    """``conditions`` ANDed as a balanced tree: thousands of terms stay within SQLite's expression depth."""
    if len(conditions) == 1:
        return conditions[0]
    half = len(conditions) // 2
    return f"({_all_of(conditions[:half])} AND {_all_of(conditions[half:])})"


def _like(terms: list[str]) -> Query:
    """Every term a literal substring of one of the searched columns.

    LIKE folds ASCII letters only; a term with a cased non-ASCII letter (``éa``) is compared with the
    columns lower-cased (``br_lower``), as the full-text indexes fold every letter.
    """
    plain = "(" + " OR ".join(f"i.{f} LIKE ? ESCAPE '\\'" for f in SEARCH_FIELDS) + ")"
    folded = "(" + " OR ".join(f"br_lower(i.{f}) LIKE ? ESCAPE '\\'" for f in SEARCH_FIELDS) + ")"
    conditions, params = [], []
    for term in terms:
        fold = not term.isascii() and term.lower() != term.upper()
        conditions.append(folded if fold else plain)
        params += [like_pattern(term.lower() if fold else term)] * len(SEARCH_FIELDS)
    return _all_of(conditions), params


def _intersect(sets: list[Query]) -> Query:
    """The pks in every set, nested in groups so any number of terms stays within SQLite's compound limit."""
    while len(sets) > 1:
        sets = [(" INTERSECT ".join(f"SELECT pk FROM ({sql})" for sql, _ in group), [p for _, ps in group for p in ps])
                for group in (sets[i:i + 64] for i in range(0, len(sets), 64))]
    return sets[0]


def _distinct_terms(terms: list[str]) -> list[str]:
    """Terms without repeats (an ASCII term repeated in another case asks nothing more either)."""
    seen: dict[str, str] = {}
    for term in terms:
        seen.setdefault(term.lower() if term.isascii() else term, term)
    return list(seen.values())


def target_query(conn: sqlite3.Connection, scope: Scope, terms: list[str], trigram: bool, scored: bool) -> Candidates:
    """One target's candidate rows within the scope (BM25 computed only if ``scored``).

    Rows holding every indexed term in their own fields are ranked by BM25 (trigram index, else the
    character index); rows that need their folder path for a term rank after them (score 0).
    """
    terms = _distinct_terms(terms)
    where, params = scope.sql()
    fts_terms = [t for t in terms if trigram and len(t) >= TRIGRAM_MIN]
    char_terms = [t for t in terms if t not in fts_terms and uses_char_index(t)]
    like_terms = [t for t in terms if t not in fts_terms and t not in char_terms]
    if like_terms:
        like_sql, like_params = _like(like_terms)
        where += " AND " + like_sql
        params += like_params
    if not fts_terms and not char_terms:
        return Candidates(f"SELECT {_CANDIDATE.format(score='0.0')} FROM items i WHERE {where}", params, scan=True)

    # The score source: rows holding every full-text term (else every character term) in their fields.
    table, match = (("items_fts", " AND ".join(fts_phrase(t) for t in fts_terms)) if fts_terms else
                    ("items_chars", " AND ".join(char_phrase(t) for t in char_terms)))
    bm25 = f"bm25(items_fts, {_WEIGHTS})" if fts_terms else "bm25(items_chars)"
    scored_sql = f"SELECT rowid AS pk, {bm25 if scored else '0.0'} AS score FROM {table} WHERE {table} MATCH ?"
    # Each term that also names folders is its own set (field matches plus subtrees); the other terms
    # are one full-text match per index. The candidates are the sets' intersection.
    ranges = {(t, chars): folder_ranges(conn, scope.source_id, t, chars)
              for t, chars in [(t, False) for t in fts_terms] + [(t, True) for t in char_terms]}
    sets: list[Query] = []
    for name, chars in (("items_fts", False), ("items_chars", True)):
        plain = [t for (t, c), subtrees in ranges.items() if c == chars and not subtrees]
        if plain:
            phrase = char_phrase if chars else fts_phrase
            sets.append((f"SELECT rowid AS pk FROM {name} WHERE {name} MATCH ?", [" AND ".join(map(phrase, plain))]))
    for (term, chars), subtrees in ranges.items():
        if subtrees:
            name, phrase = ("items_chars", char_phrase(term)) if chars else ("items_fts", fts_phrase(term))
            sets.append((f"SELECT pk FROM (SELECT rowid AS pk FROM {name} WHERE {name} MATCH ? UNION {_IN_RANGES})",
                         [phrase, json.dumps(subtrees), scope.source_id]))
    matched, matched_params = _intersect(sets)
    paths = any(ranges.values())
    # Rows of the score source, joined (CROSS JOIN fixes the order) and filtered by the scope. They are
    # candidates by themselves unless other terms (character terms beside full-text ones) must hold too.
    scored_where, scored_params = where, list(params)
    if fts_terms and char_terms:
        scored_where += f" AND i.pk IN ({matched})"
        scored_params += matched_params
    sql = (f"SELECT {_CANDIDATE.format(score='m.score')} FROM ({scored_sql}) m CROSS JOIN items i ON i.pk = m.pk "
           f"WHERE {scored_where}")
    if not paths:
        return Candidates(sql, [match] + scored_params)
    # Plus the rows that match some term only through their folder path (unranked: score 0).
    not_scored = f"i.pk NOT IN (SELECT rowid FROM {table} WHERE {table} MATCH ?)"
    if len(terms) == 1:
        # One term: those rows are the folders' subtrees, walked through the tree index, minus the field matches.
        ((term, chars), subtrees), = ((k, v) for k, v in ranges.items() if v)
        path_where, path_params = scope.sql(preorder_index=False)  # (one indexed term: no LIKE terms)
        by_path = (f"SELECT {_CANDIDATE.format(score='0.0')} FROM json_each(?) r CROSS JOIN items i "
                   "WHERE i.source_id = ? AND i.section_id = json_extract(r.value, '$[0]') "
                   "AND i.preorder BETWEEN json_extract(r.value, '$[1]') AND json_extract(r.value, '$[2]') "
                   f"AND {path_where} AND {not_scored}")
        return Candidates(f"{sql} UNION ALL {by_path}",
                          [match] + scored_params + [json.dumps(subtrees), scope.source_id] + path_params + [match])
    by_path = (f"SELECT {_CANDIDATE.format(score='0.0')} FROM ({matched}) m CROSS JOIN items i ON i.pk = m.pk "
               f"WHERE {where} AND {not_scored}")
    return Candidates(f"{sql} UNION ALL {by_path}", [match] + scored_params + matched_params + params + [match])


def scope_query(scope: Scope) -> Candidates:
    """Every row in scope (no targets)."""
    where, params = scope.sql()
    return Candidates(f"SELECT {_CANDIDATE.format(score='0.0')} FROM items i WHERE {where}", params, scan=True)


Page = list[tuple[int, float]]


def count_and_page(conn: sqlite3.Connection, queries: list[Candidates], order: str, limit: int,
                   offset: int) -> list[tuple[int, int, Page]]:
    """Total, unique URLs and one page of (pk, score) for each query and, for several, their union (last).

    The union keeps each row once with its best score. Index-driven candidates are materialised once
    (a common table used twice), counted and sorted inside SQLite; a scan of the scoped rows is
    counted by one statement and paged by another that walks the tree index and stops at the page.
    """
    if len(queries) == 1 and queries[0].scan:
        return [_scan_count_and_page(conn, queries[0], limit, offset)]
    names = [f"c{n}" for n in range(len(queries))]
    ctes = [f"{name} AS ({q.sql})" for name, q in zip(names, queries)]
    params: list[Any] = [p for q in queries for p in q.params]
    if len(queries) > 1:
        every = " UNION ALL ".join(f"SELECT * FROM {name}" for name in names)
        ctes.append(f"u AS (SELECT pk, min(score) AS score, url_key, section_id, preorder, item_id FROM ({every}) "
                    "GROUP BY pk)")
        names.append("u")
    parts = []
    for n, name in enumerate(names):
        parts.append(f"SELECT {n}, 0, count(*), count(DISTINCT url_key), NULL, NULL, NULL FROM {name}")
        if limit > 0:
            parts.append(f"SELECT * FROM (SELECT {n}, 1, pk, score, section_id, preorder, item_id FROM {name} "
                         f"ORDER BY {ORDERS[order]} LIMIT ? OFFSET ?)")
            params += [limit, offset]
    counts: dict[int, tuple[int, int]] = {}
    pages: dict[int, list[tuple[Any, ...]]] = {n: [] for n in range(len(names))}
    for n, kind, a, b, *key in conn.execute(f"WITH {', '.join(ctes)} {' UNION ALL '.join(parts)}", params):
        if kind == 0:
            counts[n] = (a, b)
        else:
            pages[n].append((a, b, *key))
    # The page is re-sorted here by the same key: a compound statement does not promise its arms' order.
    sort_key = (lambda r: (r[1], r[2], r[3], r[4])) if order == "relevance" else (lambda r: (r[2], r[3], r[4]))
    return [(*counts[n], [(r[0], r[1]) for r in sorted(pages[n], key=sort_key)]) for n in range(len(names))]


def _scan_count_and_page(conn: sqlite3.Connection, query: Candidates, limit: int, offset: int) -> tuple[int, int, Page]:
    """Unranked candidates (every score 0): relevance order is tree order, which the tree index yields."""
    total, unique = conn.execute(f"SELECT count(*), count(DISTINCT url_key) FROM ({query.sql})", query.params).fetchone()
    if limit <= 0 or offset >= total:
        return total, unique, []
    page = conn.execute(f"SELECT pk, score FROM ({query.sql}) ORDER BY {ORDERS['tree']} LIMIT ? OFFSET ?",
                        [*query.params, limit, offset]).fetchall()
    return total, unique, page
