"""Full-text index of archived page bodies (BM25, CJK-aware) and the searches over it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from bookmark_research.index.text import CHAR_TOKENIZER, char_phrase, char_text, fts_phrase, highlight, split_terms
from bookmark_research.index.text import uses_char_index
from bookmark_research.providers.urls import canonical_url

# Created on first use, so an index without archived pages carries none of this. Page bodies live in
# files; both FTS tables are contentless and snippets are cut from the files.
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS archive_pages (
    id INTEGER PRIMARY KEY,
    sha256 TEXT NOT NULL UNIQUE,
    characters INTEGER NOT NULL,
    body_path TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS archive_urls (
    capture_id TEXT NOT NULL,
    page_id INTEGER REFERENCES archive_pages(id),
    requested_url TEXT NOT NULL,
    returned_url TEXT,
    canonical_url TEXT,
    title TEXT,
    provider TEXT NOT NULL,
    retrieved_at TEXT,
    extraction_status TEXT,
    PRIMARY KEY (capture_id, requested_url)
);
CREATE INDEX IF NOT EXISTS archive_urls_page ON archive_urls(page_id);
CREATE INDEX IF NOT EXISTS archive_urls_url ON archive_urls(requested_url);
CREATE INDEX IF NOT EXISTS archive_urls_canonical ON archive_urls(canonical_url);
CREATE VIRTUAL TABLE IF NOT EXISTS archive_fts USING fts5(body, content='', tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS archive_chars USING fts5(chars, content='', tokenize="{CHAR_TOKENIZER}");
"""


def ensure_schema(conn: sqlite3.Connection) -> None:
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name='archive_pages'").fetchone():
        return
    for statement in SCHEMA.split(";\n"):
        if statement.strip():
            conn.execute(statement)


def has_archive(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name='archive_pages'").fetchone() is not None


def index_capture(conn: sqlite3.Connection, manifest: dict[str, Any], bodies: dict[str, str], root: Path) -> None:
    """Index a saved capture (inside the caller's transaction); identical bodies are indexed once."""
    ensure_schema(conn)
    for page in manifest["pages"]:
        page_id = None
        digest = page.get("sha256")
        if digest:
            row = conn.execute("SELECT id FROM archive_pages WHERE sha256=?", (digest,)).fetchone()
            if row is None:
                text = bodies[digest]
                page_id = conn.execute(
                    "INSERT INTO archive_pages (sha256, characters, body_path) VALUES (?, ?, ?)",
                    (digest, len(text), str(root / "pages" / f"{digest}.txt"))).lastrowid
                conn.execute("INSERT INTO archive_fts(rowid, body) VALUES (?, ?)", (page_id, text))
                chars = char_text(text)
                if chars:
                    conn.execute("INSERT INTO archive_chars(rowid, chars) VALUES (?, ?)", (page_id, chars))
            else:
                page_id = row[0]
        conn.execute(
            "INSERT OR REPLACE INTO archive_urls (capture_id, page_id, requested_url, returned_url, canonical_url, "
            "title, provider, retrieved_at, extraction_status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (manifest["capture_id"], page_id, page["requested_url"], page.get("returned_url"),
             canonical_url(page["requested_url"]), page.get("title"), manifest["provider"],
             manifest["retrieved_at"], page.get("extraction_status")))


def page_match(terms: list[str]) -> tuple[str, list[Any]]:
    """SQL selecting (id, score) of archived pages containing every term (words; CJK at any length)."""
    word_terms = [t for t in terms if not uses_char_index(t)]
    char_terms = [t for t in terms if uses_char_index(t)]
    parts: list[str] = []
    params: list[Any] = []
    if word_terms:
        parts.append("SELECT rowid AS id, bm25(archive_fts) AS score FROM archive_fts WHERE archive_fts MATCH ?")
        params.append(" AND ".join(fts_phrase(t) for t in word_terms))
    if char_terms:
        parts.append("SELECT rowid AS id, bm25(archive_chars) AS score FROM archive_chars WHERE archive_chars MATCH ?")
        params.append(" AND ".join(char_phrase(t) for t in char_terms))
    if len(parts) == 1:
        return parts[0], params
    return (f"WITH a AS MATERIALIZED ({parts[0]}), b AS MATERIALIZED ({parts[1]}) "
            "SELECT a.id AS id, a.score + b.score AS score FROM a JOIN b ON a.id = b.id"), params


def read_body(path: str) -> str:
    """An archived page body; empty when the file is gone."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return ""


def search_archive(conn: sqlite3.Connection | None, query: str, *, url: str | None = None, limit: int = 10,
                   offset: int = 0) -> dict[str, Any]:
    """Archived pages ranked by BM25, each with a snippet and the URLs and captures it came from."""
    terms = split_terms(query)
    out: dict[str, Any] = {"query": query, "total": 0, "limit": limit, "offset": offset, "next_offset": None,
                           "results": []}
    if conn is None or not has_archive(conn) or not terms:
        return out
    sql, params = page_match(terms)
    url_filter = ""
    if url:
        url_filter = (" AND m.id IN (SELECT page_id FROM archive_urls WHERE instr(requested_url, ?) > 0 "
                      "OR instr(coalesce(returned_url, ''), ?) > 0)")
        params += [url, url]
    rows = conn.execute(f"SELECT m.id, m.score, p.sha256, p.characters, p.body_path FROM ({sql}) m "
                        f"JOIN archive_pages p ON p.id = m.id WHERE 1{url_filter} ORDER BY m.score, p.sha256",
                        params).fetchall()
    out["total"] = len(rows)
    page = rows[offset:offset + limit]
    for page_id, score, digest, characters, body_path in page:
        seen = conn.execute(
            "SELECT requested_url, returned_url, title, capture_id, provider, retrieved_at FROM archive_urls "
            "WHERE page_id=? ORDER BY retrieved_at DESC, capture_id DESC", (page_id,)).fetchall()
        out["results"].append({
            "sha256": digest, "characters": characters, "score": round(-score, 6), "body_path": body_path,
            "snippet": highlight(read_body(body_path), terms, width=200),
            "occurrences": [{"url": u, "returned_url": r, "title": t, "capture_id": c, "provider": p,
                             "retrieved_at": at} for u, r, t, c, p, at in seen],
        })
    if offset + len(page) < len(rows):
        out["next_offset"] = offset + len(page)
    return out
