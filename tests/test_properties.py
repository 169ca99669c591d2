"""Property tests of the package reader: random section JSON and file names never produce a traceback.

Whatever a package holds, a sync either succeeds or fails with a one-line BookmarkResearchError that
leaves the index as it was; no other exception may escape. (Search literal semantics have their own
property tests with the search code.)
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bookmark_research.errors import BookmarkResearchError
from tests.conftest import Core
from tests.packages import primary, temporary

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                    st.text(max_size=30))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                      max_leaves=20)
KEYS = ["format", "schemaVersion", "sectionType", "slot", "title", "fileRole", "id", "label", "tempKind", "tree",
        "items", "identityMap", "children", "url", "note", "noteColor", "tags", "color", "text", "type", "parentId",
        "sectionId", "copyId", "anchorOnly", "inheritFrom"]


def _mutate(data: Any, path: list[int], value: Any, key: str) -> Any:
    """Replace or add ``key`` somewhere inside ``data`` (the place chosen by ``path``)."""
    node = data
    for step in path:
        children = [v for v in (node.values() if isinstance(node, dict) else node) if isinstance(v, (dict, list))]
        if not children:
            break
        node = children[step % len(children)]
    if isinstance(node, dict):
        node[key] = value
    elif isinstance(node, list):
        node.append(value)
    return data


sections = st.builds(
    _mutate,
    st.sampled_from([primary, temporary]).map(lambda make: make()),
    st.lists(st.integers(0, 8), max_size=6),
    values,
    st.sampled_from(KEYS),
)


def _sync(root: Path) -> None:
    with tempfile.TemporaryDirectory() as data:
        core = Core(Path(data) / "data")
        try:
            out = core.sync(root, source_id="p")
            event("synced")
            core.search("p", "a", "示例", limit=5)
            core.context("p")
            assert out["counts"]["sections"] >= 1
        except BookmarkResearchError as exc:
            event(f"refused: {exc.kind}")
            assert "\n" not in exc.message and exc.message.strip() == exc.message
            assert core("index_status")["sources"] == []
        finally:
            core.app.close()


def _folder(name: bytes) -> bytes:
    return "临时栏目/常规链式/".encode() if b"temp" in name else "永久栏目/".encode()


@SETTINGS
@given(section=sections, wrapper=st.sampled_from(["folder", "zip"]))
def test_random_section_json_never_escapes(section: Any, wrapper: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pkg"
        folder = root / ("临时栏目/常规链式" if section.get("sectionType") == "temporary" else "永久栏目")
        folder.mkdir(parents=True)
        (folder / "card.json").write_text(json.dumps(section, ensure_ascii=False), encoding="utf-8")
        if wrapper == "zip":
            archive = Path(tmp) / "pkg.zip"
            with zipfile.ZipFile(archive, "w") as zf:
                for path in root.rglob("*"):
                    if path.is_file():
                        zf.write(path, path.relative_to(root).as_posix())
            _sync(archive)
        else:
            _sync(root)


@SETTINGS
@given(raw=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                     values.map(lambda v: json.dumps(v).encode())))
def test_random_bytes_as_a_section_never_escape(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pkg"
        (root / "永久栏目").mkdir(parents=True)
        (root / "永久栏目" / "A.json").write_bytes(raw)
        _sync(root)


names = st.binary(min_size=1, max_size=120).filter(lambda b: b"/" not in b and b"\0" not in b
                                                    and b not in (b".", b".."))


@SETTINGS
@given(name=names, suffix=st.sampled_from([b".json", b".JSON", b".canvas", b".png", b""]),
       nested=st.booleans())
def test_random_file_names_never_escape(name: bytes, suffix: bytes, nested: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pkg"
        (root / "永久栏目").mkdir(parents=True)
        (root / "永久栏目" / "A.json").write_text(json.dumps(primary(), ensure_ascii=False), encoding="utf-8")
        folder = os.fsencode(root) + b"/" + (_folder(name) if nested else b"")
        os.makedirs(folder, exist_ok=True)
        body = json.dumps(temporary() if suffix.lower() == b".json" else {"nodes": [], "edges": []}).encode()
        with open(folder + name[:200] + suffix, "wb") as fh:
            fh.write(body)
        _sync(root)


@SETTINGS
@given(entry=st.text(min_size=1, max_size=80), data=st.binary(max_size=64))
def test_random_zip_entry_names_never_escape(entry: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "pkg.zip"
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("pkg/永久栏目/A.json", json.dumps(primary(), ensure_ascii=False))
            info = zipfile.ZipInfo("placeholder")
            info.filename = entry  # unnormalised, as a hostile archive may hold it
            zf.writestr(info, data)
        _sync(archive)
