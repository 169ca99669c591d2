"""A brute-force reading of a package's JSON: what a search must answer, found without any index.

Each item's searchable texts are its title, URL, note, tag texts and folder path (the titles of its
folders, " / " between them), lower-cased; a term matches a row when it is a substring of one of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Row:
    section_id: str
    label: str
    item_id: str
    preorder: int
    is_bookmark: bool
    url: str
    texts: list[str]  # folded title, url, note, tag texts, folder path
    tags: set[str]
    ancestors: set[str] = field(default_factory=set)


def _walk(nodes: list[dict[str, Any]], section_id: str, label: str, notes: dict[str, dict[str, Any]],
          temporary: bool, path: list[str], ancestors: list[str], out: list[Row], start: int) -> None:
    for node in nodes:
        meta = node if temporary else notes.get(node["id"], {})
        title, url = node.get("title", ""), node.get("url", "")
        is_bookmark = node.get("type") == "bookmark" if temporary else bool(url)
        tags = [t.get("text", "") for t in meta.get("tags", [])]
        texts = [title, url, (meta.get("note") or "").strip(), *tags, " / ".join(path)]
        out.append(Row(section_id, label, node["id"], len(out) - start, is_bookmark, url,
                       [t.lower() for t in texts], set(tags), set(ancestors)))
        children = node.get("children") or []
        if children:
            _walk(children, section_id, label, notes, temporary, path + [title] if title else path,
                  ancestors + [node["id"]], out, start)


def scan_package(package: Path) -> list[Row]:
    """Every item of every section file, with the texts a search must match."""
    rows: list[Row] = []
    for file in sorted(package.rglob("*.json")):
        data = json.loads(file.read_text(encoding="utf-8"))
        start = len(rows)
        if data["sectionType"] == "permanent":
            notes = {e["syncId"]: e for e in data.get("identityMap", [])}
            _walk([data["tree"]], "permanent-section", data["slot"], notes, False, [], [], rows, start)
        else:
            _walk(data["items"], data["id"], data["label"], {}, True, [], [], rows, start)
    return rows


def brute_force(rows: list[Row], arguments: dict[str, Any]) -> tuple[list[set[tuple[str, str]]], set[tuple[str, str]]]:
    """Matched (section, item) keys per target and their union."""
    scoped = [r for r in rows if r.is_bookmark]
    if "section" in arguments:
        scoped = [r for r in scoped if arguments["section"] in (r.section_id, r.label)]
    if "folder_id" in arguments:
        scoped = [r for r in scoped if arguments["folder_id"] in r.ancestors]
    for tag in arguments.get("tags", []):
        scoped = [r for r in scoped if tag in r.tags]
    per_target = []
    for target in arguments["targets"]:
        terms = [t.lower() for t in target.split()]
        per_target.append({(r.section_id, r.item_id) for r in scoped
                           if all(any(t in text for text in r.texts) for t in terms)})
    return per_target, set().union(*per_target)
