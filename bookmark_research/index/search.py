"""Ranked bookmark search: BM25 over trigram FTS5, a character index for 1-2 character terms.

Each target is its own query (terms ANDed, each term a literal, case-insensitive substring of
title, URL, note, tag text or folder path). The top-level result is the union of all targets.
"""

from __future__ import annotations

import heapq
import json
import sqlite3
from typing import Any

from bookmark_research.index.db import has_trigram
from bookmark_research.index.query import count_and_page, scope_query, target_query
from bookmark_research.index.scope import Scope, build_scope
from bookmark_research.index.status import COUNT_NOTE
from bookmark_research.index.text import SEARCH_FIELDS, highlight, split_terms

ROW_COLUMNS = (
    "i.pk, i.source_id, i.section_id, i.item_id, i.parent_id, i.item_type, i.position, i.preorder, i.title, i.url, "
    "i.note, i.note_color, i.tags_json, i.tag_text, i.path_json, i.folder_path, i.extra_json, i.metadata_json, "
    "i.synthetic, i.revision, s.label, s.file_path, s.section_type"
)


Candidate = tuple[int, float | None, str | None, str, int, str]  # pk, score, url_key, section, preorder, item


def _page(candidates: list[Candidate], order: str, limit: int, offset: int) -> tuple[int, int, list[tuple[int, float | None]]]:
    """Total, unique URLs and one page of (pk, score), best first (or in tree order)."""
    total = len(candidates)
    unique_urls = len({c[2] for c in candidates if c[2] is not None})
    if limit <= 0 or offset >= total:
        return total, unique_urls, []
    if order == "relevance":
        key = lambda c: (c[1] or 0.0, c[3], c[4], c[5])  # noqa: E731  (bm25: lower is better)
    else:
        key = lambda c: (c[3], c[4], c[5])  # noqa: E731
    page = heapq.nsmallest(offset + limit, candidates, key=key)[offset:]
    return total, unique_urls, [(c[0], c[1]) for c in page]


def _content_candidates(conn: sqlite3.Connection, scope: Scope, terms: list[str],
                        pages: dict[str, str]) -> list[Candidate]:
    """Bookmarks whose archived page (by requested, returned or canonical URL) contains every term."""
    from bookmark_research.evidence.index import has_archive, page_match

    if not has_archive(conn) or not terms:
        return []
    sql, params = page_match(terms)
    best: dict[str, tuple[float, str]] = {}
    for score, body, *urls in conn.execute(
            f"SELECT m.score, p.body_path, u.requested_url, u.returned_url, u.canonical_url FROM ({sql}) m "
            f"JOIN archive_pages p ON p.id = m.id JOIN archive_urls u ON u.page_id = m.id", params):
        for url in urls:
            if url and (url not in best or score < best[url][0]):
                best[url] = (score, body)
    if not best:
        return []
    where, scope_params = scope.sql()
    rows = conn.execute(
        f"SELECT i.pk, i.url, i.section_id, i.preorder, i.item_id FROM items i "
        f"WHERE {where} AND i.url IN (SELECT value FROM json_each(?))", [*scope_params, json.dumps(list(best))])
    out: list[Candidate] = []
    for pk, url, section_id, preorder, item_id in rows:
        score, body = best[url]
        pages[url] = body
        out.append((pk, score, url, section_id, preorder, item_id))
    return out


def _content_answers(conn: sqlite3.Connection, scope: Scope, targets: list[str], order: str, limit: int,
                     offset: int, pages: dict[str, str]) -> list[tuple[int, int, list[tuple[int, float | None]]]]:
    """Per target and (for several) their union: total, unique URLs and page, matching archived page text."""
    answers = []
    union: dict[int, Candidate] = {}
    for target in targets:
        candidates = _content_candidates(conn, scope, split_terms(target), pages)
        answers.append(_page(candidates, order, limit, offset))
        for c in candidates:  # the union keeps each row once, with its best score
            seen = union.get(c[0])
            if seen is None or (c[1] or 0.0) < (seen[1] or 0.0):
                union[c[0]] = c
    if len(targets) > 1:
        answers.append(_page(list(union.values()), order, limit, offset))
    return answers


def _anchor_map(conn: sqlite3.Connection, source_id: str) -> dict[str, list[str]]:
    shown: dict[str, list[str]] = {}
    for sid, canonical in conn.execute(
            "SELECT section_id, canonical_id FROM sections WHERE source_id=? AND is_anchor=1 AND canonical_id IS NOT NULL "
            "ORDER BY section_id", (source_id,)):
        shown.setdefault(canonical, []).append(sid)
    return shown


def _raw_node(r: tuple, metadata: dict[str, Any]) -> dict[str, Any]:
    """The node as exported (without children), rebuilt from its columns and its extra fields."""
    raw: dict[str, Any] = {"id": r[3]}
    if r[22] == "temporary":
        raw.update(sectionId=r[2], type=r[5], title=r[8])
        if r[9]:
            raw["url"] = r[9]
        raw.update(metadata)
    else:
        if r[4] is not None:
            raw["parentId"] = r[4]
        raw["title"] = r[8]
        if r[9]:
            raw["url"] = r[9]
    if r[16]:
        raw.update(json.loads(r[16]))
    return raw


def item_rows(conn: sqlite3.Connection, pks: list[int], shown: dict[str, list[str]] | None = None) -> dict[int, dict[str, Any]]:
    """Full result rows for ``pks``, keyed by pk."""
    if not pks:
        return {}
    out: dict[int, dict[str, Any]] = {}
    for chunk in range(0, len(pks), 500):
        part = pks[chunk:chunk + 500]
        for r in conn.execute(
                f"SELECT {ROW_COLUMNS} FROM items i JOIN sections s ON s.source_id=i.source_id AND s.section_id=i.section_id "
                f"WHERE i.pk IN ({','.join('?' * len(part))})", part):
            metadata = json.loads(r[17])
            row = {
                "source_id": r[1], "section_id": r[2], "item_id": r[3], "source": r[1], "section": r[2], "item": r[3],
                "parent_id": r[4], "item_type": r[5], "position": r[6], "preorder": r[7], "title": r[8], "url": r[9],
                "note": r[10], "note_color": r[11], "tags": json.loads(r[12]), "path": json.loads(r[14]),
                "folder_path": r[15], "raw_json": _raw_node(r, metadata), "metadata": metadata,
                "revision": r[19], "section_label": r[20], "file_path": r[21],
            }
            if r[18]:
                row["synthetic"] = True
            if shown and r[2] in shown:
                row["shown_in_anchors"] = shown[r[2]]
            out[r[0]] = row
    return out


def _snippet(row: dict[str, Any], terms: list[str]) -> dict[str, str] | None:
    fields = {"title": row["title"], "note": row["note"], "url": row["url"],
              "tags": " ".join(t.get("text", "") for t in row["tags"]), "folder_path": row["folder_path"]}
    for name, text in fields.items():
        snippet = highlight(text, terms)
        if snippet:
            return {"field": name, "text": snippet}
    return None


def canvas_matches(conn: sqlite3.Connection, source_id: str, targets: list[str]) -> list[dict[str, Any]]:
    """Canvas text cards, group labels and edge labels containing every term of a target."""
    nodes = conn.execute("SELECT canvas_path, node_id, node_type, label, text FROM nodes WHERE source_id=? "
                         "ORDER BY position", (source_id,)).fetchall()
    edges = conn.execute("SELECT canvas_path, edge_id, label, from_node, to_node FROM edges WHERE source_id=? "
                         "ORDER BY position", (source_id,)).fetchall()
    out: list[dict[str, Any]] = []
    for target in targets:
        terms = [t.casefold() for t in split_terms(target)]

        def hit(*texts: str | None) -> bool:
            folded = " \n ".join(t for t in texts if t).casefold()
            return bool(folded) and all(t in folded for t in terms)

        for canvas_path, node_id, node_type, label, text in nodes:
            if hit(label, text):
                out.append({"target": target, "kind": node_type, "canvas_path": canvas_path, "node_id": node_id,
                            "node_type": node_type, "label": label, "text": text})
        for canvas_path, edge_id, label, from_node, to_node in edges:
            if hit(label):
                out.append({"target": target, "kind": "edge", "canvas_path": canvas_path, "edge_id": edge_id,
                            "label": label, "from_node": from_node, "to_node": to_node})
    return out


def search_bookmarks(
    conn: sqlite3.Connection,
    source_id: str,
    *,
    targets: list[str] | None = None,
    section: str | None = None,
    group_id: str | None = None,
    folder_id: str | None = None,
    tags: list[str] | None = None,
    tag_colors: list[str] | None = None,
    item_types: list[str] | None = None,
    limit: int = 20,
    offset: int = 0,
    count_only: bool = False,
    order: str = "relevance",
    content: bool = False,
) -> dict[str, Any]:
    item_types = item_types or ["bookmark"]
    scope = build_scope(conn, source_id, section=section, group_id=group_id, folder_id=folder_id, tags=tags,
                        tag_colors=tag_colors, item_types=item_types)
    targets = list(dict.fromkeys(targets or []))
    trigram = has_trigram(conn)
    page_limit = 0 if count_only else limit
    shown = _anchor_map(conn, source_id)
    effective_order = order if targets else "tree"

    scored = effective_order == "relevance" and page_limit > 0
    per_target: list[dict[str, Any]] = []
    all_terms: list[str] = []
    pages: dict[str, str] = {}  # content search: bookmark URL → archived body that matched
    if content and targets:
        answers = _content_answers(conn, scope, targets, effective_order, page_limit, offset, pages)
    else:
        queries = [target_query(conn, scope, split_terms(t), trigram, scored) for t in targets] or [scope_query(scope)]
        answers = count_and_page(conn, queries, effective_order, page_limit, offset)
    for target, (total, unique_urls, rows) in zip(targets, answers):
        terms = split_terms(target)
        all_terms.extend(terms)
        per_target.append({"target": target, "terms": terms, "total": total, "unique_urls": unique_urls,
                           "limit": page_limit, "offset": offset, "_rows": rows,
                           "next_offset": _next(offset, len(rows), total)})
    total, unique_urls, rows = answers[-1]  # the union of several targets, or the only one

    wanted = {pk for pk, _ in rows} | {pk for t in per_target for pk, _ in t["_rows"]}
    full = item_rows(conn, sorted(wanted), shown)

    def render(page: list[tuple[int, float | None]], terms: list[str]) -> list[dict[str, Any]]:
        out = []
        for pk, score in page:
            row = dict(full[pk])
            if score:
                row["score"] = round(-score, 6)
            if terms and content:
                from bookmark_research.evidence.index import read_body

                body = pages.get(row["url"])
                text = highlight(read_body(body), terms, width=160) if body else None
                row["snippet"] = {"field": "page", "text": text} if text else None
            elif terms:
                row["snippet"] = _snippet(row, terms)
            out.append(row)
        return out

    for t in per_target:
        t["results"] = render(t.pop("_rows"), t.pop("terms"))
    result: dict[str, Any] = {
        "source_id": source_id,
        "total": total,
        "unique_urls": unique_urls,
        "limit": page_limit,
        "offset": offset,
        "next_offset": _next(offset, len(rows), total),
        "order": effective_order,
        "ranking": "bm25" if effective_order == "relevance" else "tree_order",
        "results": render(rows, all_terms),
        "targets": per_target,
        "query_scope": {"section": section, "group_id": group_id, "folder_id": folder_id, "tags": tags or [],
                        "tag_colors": tag_colors or [], "item_types": item_types},
        "match_mode": "literal_substring",
        "match_index": "fts5_trigram+fts5_chars+like" if trigram else "fts5_chars+like",
        "searched_fields": ["archived_page_text"] if content else list(SEARCH_FIELDS[:3]) + ["tags.text", "folder_path"],
        "counts": {"instances": total, "unique_urls": unique_urls, "note": COUNT_NOTE},
    }
    if scope.anchor_of:
        result["anchor_of"] = scope.anchor_of
        result["anchor_note"] = ("The requested section is a copy anchor: it shows its primary's bookmarks, which are "
                                 "counted once, under the primary")
    matches = canvas_matches(conn, source_id, targets) if targets else []
    if matches:
        result["canvas_matches"] = matches
        result["canvas_match_note"] = "Canvas text, group labels and edge labels are not bookmarks and are not counted in total"
    return result


def _next(offset: int, returned: int, total: int) -> int | None:
    return offset + returned if returned and offset + returned < total else None


COMPACT_FORMAT = "bookmark-search-v1"
_ALIASES = ("source", "section", "item")


def compact(result: dict[str, Any]) -> dict[str, Any]:
    """Replace result lists with references into one shared ``rows`` map (``r1``, ``r2``, …).

    Identical rows (same instance, same content) are stored once; instances that share a URL stay
    separate rows. Alias fields are dropped from the rows. Totals and offsets are unchanged.
    """
    rows: dict[str, dict[str, Any]] = {}
    keys: dict[str, str] = {}

    def ref(row: dict[str, Any]) -> str:
        slim = {k: v for k, v in row.items() if k not in _ALIASES}
        signature = json.dumps(slim, sort_keys=True, ensure_ascii=False)
        if signature not in keys:
            keys[signature] = f"r{len(keys) + 1}"
            rows[keys[signature]] = slim
        return keys[signature]

    result["result_refs"] = [ref(r) for r in result.pop("results")]
    result["results"] = []
    for target in result["targets"]:
        target["result_refs"] = [ref(r) for r in target.pop("results")]
        target["results"] = []
    result["rows"] = rows
    result["compact_format"] = COMPACT_FORMAT
    return result
