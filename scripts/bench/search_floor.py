"""The floor a whole CLI search is measured against: one bare Python process over a prebuilt FTS5 table.

    python scripts/bench/search_floor.py build PACKAGE DB      # not timed: the prebuilt table
    python scripts/bench/search_floor.py DB 'ARGUMENTS-JSON'   # timed as a whole process

The table holds the package's bookmarks (title, URL, note) with the trigram tokenizer. A query
answers what the CLI answers, minus everything the project adds (filters, tags and folder paths,
snippets, validation, JSON shape): for each target, the BM25-ranked page (20 rows from ``offset``;
rowid order for ``order: tree``; none for ``count_only``), the number of matches and of unique URLs;
for several targets also the union's counts. Terms of 3+ characters go through ``MATCH``; shorter
ones, which a trigram index cannot answer, are ``LIKE`` filters (a scan), as a bare FTS5 user would
write them. This file imports nothing but the standard library, like the process it stands for.
"""

from __future__ import annotations

import json
import sqlite3
import sys


def _rows(nodes: list, notes: dict, out: list) -> None:
    for node in nodes:
        if isinstance(node, dict):
            if node.get("url"):
                note = notes.get(node.get("id")) or node.get("note") or ""
                out.append((node.get("title", ""), node["url"], note.strip()))
            _rows(node.get("children") or [], notes, out)


def build(package: str, db_path: str) -> None:
    """Write the floor's table from the package files (browser-tree notes come from the identity map)."""
    from pathlib import Path

    rows: list[tuple[str, str, str]] = []
    for file in sorted(Path(package).rglob("*.json")):
        data = json.loads(file.read_bytes())
        notes = {e.get("syncId"): e.get("note") for e in data.get("identityMap") or []}
        _rows([data["tree"]] if data.get("tree") else data.get("items") or [], notes, rows)
    Path(db_path).unlink(missing_ok=True)
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(title, url, note, tokenize='trigram')")
    with conn:
        conn.executemany("INSERT INTO f VALUES (?, ?, ?)", rows)
    conn.execute("INSERT INTO f(f) VALUES ('optimize')")
    conn.close()


def _where(terms: list[str]) -> tuple[str, list[str]]:
    long = [t for t in terms if len(t) >= 3]
    clauses, params = [], []
    if long:
        clauses.append("f MATCH ?")
        params.append(" AND ".join('"' + t.replace('"', '""') + '"' for t in long))
    for term in terms:
        if len(term) < 3:
            pattern = "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            clauses.append("(title LIKE ? ESCAPE '\\' OR url LIKE ? ESCAPE '\\' OR note LIKE ? ESCAPE '\\')")
            params += [pattern] * 3
    return " AND ".join(clauses), params


def query(db_path: str, arguments: dict) -> dict:
    conn = sqlite3.connect(db_path)
    offset = arguments.get("offset", 0)
    order = "rowid" if arguments.get("order") == "tree" else "bm25(f)"
    out: dict = {"targets": []}
    wheres = []
    for target in arguments["targets"]:
        where, params = _where(target.split())
        wheres.append((where, params))
        total, unique = conn.execute(f"SELECT count(*), count(DISTINCT url) FROM f WHERE {where}", params).fetchone()
        page = [] if arguments.get("count_only") else conn.execute(
            f"SELECT rowid, title, url, note FROM f WHERE {where} ORDER BY {order} LIMIT 20 OFFSET ?",
            [*params, offset]).fetchall()
        out["targets"].append({"target": target, "total": total, "unique_urls": unique, "results": page})
    if len(wheres) > 1:
        union = " UNION ".join(f"SELECT rowid FROM f WHERE {w}" for w, _ in wheres)
        params = [p for _, ps in wheres for p in ps]
        out["total"], out["unique_urls"] = conn.execute(
            f"SELECT count(*), count(DISTINCT url) FROM f WHERE rowid IN ({union})", params).fetchone()
    return out


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2], sys.argv[3])
    else:
        print(json.dumps(query(sys.argv[1], json.loads(sys.argv[2])), ensure_ascii=False))
