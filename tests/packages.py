"""Packages written by the tests themselves (mutable copies, built per test)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
REFERENCE = REPO.parent / "shared" / "fixtures" / "reference-canvas"

A_PATH = "永久栏目/A书签树（永久栏目）.json"
B_PATH = "永久栏目/B书签树（永久栏目）.json"
TEMP_PATH = "临时栏目/常规链式/A-1 示例.json"
CANVAS = "Demo.canvas"
PREFIX = "vault/nested/Original/"


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def primary() -> dict[str, Any]:
    return {
        "format": "bookmark-canvas-section", "schemaVersion": 3, "sectionType": "permanent", "slot": "A",
        "title": "主树", "descriptionMd": "公司分类", "fileRole": "primary", "unknown_header": {"keep": True},
        "identityMap": [{"syncId": "bookmark-alpha", "note": "查询\n中文", "extra": "preserved",
                         "tags": [{"color": "purple", "text": "关注"}]}],
        "tree": {"id": "root", "title": "", "children": [{
            "id": "companies", "parentId": "root", "title": "公司", "children": [
                {"id": "bookmark-alpha", "parentId": "companies", "title": "示例公司甲",
                 "url": "https://example.test/alpha", "future": 1},
                {"id": "bookmark-beta", "parentId": "companies", "title": "ExampleBeta",
                 "url": "https://example.test/beta"},
                {"id": "bookmark-literal", "parentId": "companies", "title": "100%_完成\\done",
                 "url": "https://example.test/literal"},
            ]}]},
    }


def anchor(inherit: str = PREFIX + A_PATH) -> dict[str, Any]:
    return {"format": "bookmark-canvas-section", "schemaVersion": 2, "sectionType": "permanent", "slot": "B",
            "copyId": "copy-b", "fileRole": "copy-anchor", "anchorOnly": True, "descriptionMd": "第二视图",
            "inheritFrom": inherit}


def temporary() -> dict[str, Any]:
    return {"format": "bookmark-canvas-section", "schemaVersion": 2, "sectionType": "temporary",
            "id": "temp-section-A-1", "label": "A-1", "title": "示例", "tempKind": "regular", "items": [
                {"id": "temp-folder", "sectionId": "temp-section-A-1", "type": "folder", "title": "研究", "children": [
                    {"id": "temp-one", "sectionId": "temp-section-A-1", "type": "bookmark", "title": "模型资料",
                     "url": "https://example.test/alpha", "note": "临时笔记", "noteColor": "blue",
                     "tags": [{"color": "green", "text": "关注"}]},
                    {"id": "temp-two", "sectionId": "temp-section-A-1", "type": "bookmark", "title": "100X完成",
                     "url": "https://example.test/other"},
                ]}]}


def canvas(temp_file: str = TEMP_PATH) -> dict[str, Any]:
    return {"nodes": [
        {"id": "permanent-section", "type": "file", "file": PREFIX + A_PATH, "x": 200, "y": 0, "width": 40, "height": 40},
        {"id": "copy-view", "type": "file", "file": PREFIX + B_PATH, "x": 250, "y": 0, "width": 40, "height": 40},
        {"id": "group-one", "type": "group", "label": "研究组", "x": 0, "y": 0, "width": 100, "height": 100},
        {"id": "temp-section-A-1", "type": "file", "file": PREFIX + temp_file, "x": 10, "y": 10, "width": 80, "height": 80},
        {"id": "text-overlap", "type": "text", "text": "overlap", "x": 95, "y": 10, "width": 20, "height": 20},
    ], "edges": [
        {"id": "edge-forward", "fromNode": "permanent-section", "toNode": "group-one"},
        {"id": "edge-none", "fromNode": "copy-view", "toNode": "temp-section-A-1", "toEnd": "none"},
    ]}


def make_demo(root: Path) -> Path:
    """The reference's "Fixture D": 5 bookmarks, 4 unique URLs, 3 folders, 3 sections, 5 nodes."""
    root.mkdir(parents=True, exist_ok=True)
    write_json(root / A_PATH, primary())
    write_json(root / B_PATH, anchor())
    write_json(root / TEMP_PATH, temporary())
    write_json(root / CANVAS, canvas())
    return root


def drop_temp_card(root: Path) -> None:
    """Delete the temporary card and its canvas node and edge, as a user removing the card would."""
    (root / TEMP_PATH).unlink()
    data = read_json(root / CANVAS)
    data["nodes"] = [n for n in data["nodes"] if n["id"] != "temp-section-A-1"]
    data["edges"] = [e for e in data["edges"] if e["id"] != "edge-none"]
    write_json(root / CANVAS, data)


def copy_fixture(name: str, dest: Path) -> Path:
    src = REFERENCE if name == "reference" else FIXTURES / name
    shutil.copytree(src, dest)
    return dest


def zip_dir(src: Path, dest: Path, wrapper: str | None = None) -> Path:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_STORED) as zf:
        for path in sorted(src.rglob("*")):
            if path.is_file():
                rel = path.relative_to(src).as_posix()
                zf.write(path, f"{wrapper}/{rel}" if wrapper else rel)
    return dest
