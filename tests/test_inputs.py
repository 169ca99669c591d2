"""Unsafe and malformed inputs: each is refused with one clear line and nothing is written."""

from __future__ import annotations

import json
import os
import stat
import zipfile
from pathlib import Path

import pytest

from bookmark_research.errors import BookmarkResearchError
from bookmark_research.sources.limits import Limits
from bookmark_research.sources.reader import read_input
from tests.packages import A_PATH, CANVAS, FIXTURES, TEMP_PATH, read_json, write_json, zip_dir


def _assert_nothing_written(core) -> None:
    assert core("index_status")["sources"] == []
    snaps = core.data_dir / "snapshots"
    assert not snaps.exists() or not any(p for p in snaps.rglob("*") if p.is_file())


def _zip(path: Path, entries: list[tuple[str, bytes]], symlink: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries:
            zf.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "../../etc/passwd")
    return path


SECTION = (Path(__file__).parent / "packages.py").read_bytes()  # any bytes will do for unsafe names


@pytest.mark.parametrize("name,message", [
    ("../outside.json", "unsafe archive path"),
    ("/absolute.json", "unsafe archive path"),
    ("C:/drive.json", "unsafe archive path"),
    ("a\\file.json", "unsafe archive path"),
    ("ok/./x.json", "unsafe archive path"),
])
def test_zip_unsafe_names(core, tmp_path, name, message):
    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("pkg/Demo.canvas", "{}")
        info = zipfile.ZipInfo("placeholder")
        info.filename = name  # bypass zipfile's own normalisation
        zf.writestr(info, b"{}")
    with pytest.raises(BookmarkResearchError, match=message):
        core.sync(archive)
    _assert_nothing_written(core)


def test_zip_symlink_duplicate_roots_and_size(core, demo, tmp_path):
    good = zip_dir(demo, tmp_path / "good.zip")
    entries = [(i.filename, zipfile.ZipFile(good).read(i)) for i in zipfile.ZipFile(good).infolist()]
    with pytest.raises(BookmarkResearchError, match="links"):
        core.sync(_zip(tmp_path / "link.zip", entries, symlink="永久栏目/evil.json"))
    with pytest.raises(BookmarkResearchError, match="duplicate archive entry"):
        with pytest.warns(UserWarning):
            core.sync(_zip(tmp_path / "dup.zip", entries + [entries[0]]))
    roots = [(f"a/{n}", d) for n, d in entries] + [(f"b/{A_PATH}", entries[0][1])]
    with pytest.raises(BookmarkResearchError, match="multiple package roots"):
        core.sync(_zip(tmp_path / "roots.zip", roots))
    with pytest.raises(BookmarkResearchError, match="size limit"):
        read_input(good, Limits(max_total_bytes=100))
    with pytest.raises(BookmarkResearchError, match="entry limit"):
        read_input(good, Limits(max_entries=2))
    with pytest.raises(BookmarkResearchError, match="exceeds the 50-byte per-file limit"):
        read_input(good, Limits(max_file_bytes=50))
    _assert_nothing_written(core)


def test_size_limits_from_the_environment(core, demo, monkeypatch):
    monkeypatch.setenv("BOOKMARK_RESEARCH_MAX_FILE_BYTES", "200")
    from tests.conftest import Core

    limited = Core(core.data_dir)
    with pytest.raises(BookmarkResearchError, match="exceeds the 200-byte per-file limit"):
        limited.sync(demo)
    limited.app.close()
    monkeypatch.setenv("BOOKMARK_RESEARCH_MAX_FILE_BYTES", "lots")
    with pytest.raises(BookmarkResearchError, match="BOOKMARK_RESEARCH_MAX_FILE_BYTES"):
        Limits.from_env()


def test_loose_card_at_the_root(core, demo, tmp_path):
    write_json(demo / "loose.json", read_json(demo / TEMP_PATH))
    with pytest.raises(BookmarkResearchError, match="loose section file"):
        core.sync(demo)
    archive = zip_dir(demo, tmp_path / "loose.zip", wrapper="pkg")
    with pytest.raises(BookmarkResearchError, match="loose section card"):
        core.sync(archive)
    _assert_nothing_written(core)


def test_symlink_pointing_outside(core, demo, tmp_path):
    outside = tmp_path / "secret.json"
    write_json(outside, read_json(demo / TEMP_PATH))
    (demo / TEMP_PATH).unlink()
    os.symlink(outside, demo / TEMP_PATH)
    with pytest.raises(BookmarkResearchError, match="external symlink"):
        core.sync(demo)
    _assert_nothing_written(core)


def test_second_canvas_and_missing_inputs(core, demo, tmp_path):
    write_json(demo / "Other.canvas", {"nodes": [], "edges": []})
    with pytest.raises(BookmarkResearchError, match="at most one .canvas"):
        core.sync(demo)
    with pytest.raises(BookmarkResearchError, match="no such file"):
        core.sync(tmp_path / "missing")
    with pytest.raises(BookmarkResearchError, match="not the file alone"):
        core.sync(demo / CANVAS)
    (tmp_path / "empty").mkdir()
    with pytest.raises(BookmarkResearchError, match="no Bookmark Canvas files"):
        core.sync(tmp_path / "empty")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(BookmarkResearchError, match="input must be"):
        core.sync(tmp_path / "notes.txt")
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(BookmarkResearchError, match="cannot read ZIP"):
        core.sync(tmp_path / "broken.zip")
    _assert_nothing_written(core)


def test_nested_package_hint(core, tmp_path):
    outer = tmp_path / "vault"
    (outer / "bookmark-canvas-20261130").mkdir(parents=True)
    import shutil

    shutil.copytree(FIXTURES / "sample-en" / "Permanent", outer / "bookmark-canvas-20261130" / "Permanent")
    with pytest.raises(BookmarkResearchError, match="did you mean .*bookmark-canvas-20261130"):
        core.sync(outer)


def test_non_bookmark_files_and_nodes_are_warnings(core):
    out = core.sync(FIXTURES / "sample-zh", source_id="zh", mode="snapshot")
    joined = "\n".join(out["warnings"])
    assert "CLAUDE.md" in joined and "截图.png" in joined
    assert "link node 'link-home'" in joined and "diagram.png" in joined
    assert out["counts"]["nodes"] == 8


def test_english_zip_with_export_root_and_vault_prefix(core, tmp_path):
    archive = zip_dir(FIXTURES / "sample-en", tmp_path / "bookmark-canvas-20261130.zip", wrapper="bookmark-canvas-20261130")
    out = core.sync(archive)
    assert out["input_kind"] == "zip" and out["counts"]["bookmarks"] == 18
    assert out["source_id"].startswith("bookmark-canvas-20261130-")
    ctx = core.context(out["source_id"])
    assert all(n["section_id"] for n in ctx["nodes"] if n["node_type"] == "file")
    copy = next(s for s in ctx["sections"] if s["is_anchor"])
    assert copy["anchor_of"] == "permanent-section"


def _hidden_from(monkeypatch, blocked: Path) -> None:
    """Make ``blocked`` unreadable the way ``chmod 000`` does for an unprivileged user (tests may run as root)."""
    real_scandir, real_read = os.scandir, Path.read_bytes

    def scandir(path="."):
        if Path(os.fsdecode(path)) == blocked:
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_scandir(path)

    def read_bytes(self):
        if self == blocked or blocked in self.parents:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)


@pytest.mark.parametrize("completeness", ["complete", "partial"])
@pytest.mark.parametrize("what", ["folder", "file"])
def test_unreadable_folder_or_file_fails_and_removes_nothing(core, demo, monkeypatch, completeness, what):
    core.sync(demo, source_id="d", completeness=completeness)
    before = (core.status("d")["counts"], core("source_history", source_id="d"))
    blocked = demo / (TEMP_PATH.rsplit("/", 1)[0] if what == "folder" else TEMP_PATH)
    _hidden_from(monkeypatch, blocked)
    with pytest.raises(BookmarkResearchError, match=r"cannot read \(Permission denied\)") as caught:
        core.sync(demo, source_id="d", completeness=completeness)
    monkeypatch.undo()
    assert str(blocked) in str(caught.value) and "\n" not in str(caught.value)
    assert (core.status("d")["counts"], core("source_history", source_id="d")) == before
    assert core.total("d", section="A-1") == 2


def _unprivileged(cmd: list[str]) -> list[str]:
    """Run ``cmd`` as an unprivileged user (root reads everything, so chmod 000 would prove nothing)."""
    if os.geteuid() != 0:
        return cmd
    import shutil

    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot drop privileges")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--", *cmd]


def test_chmod_000_folder_fails_the_cli_sync(tmp_path):
    """The report's exact steps: chmod 000 a folder inside a package, sync --completeness complete."""
    import subprocess
    import sys
    import tempfile

    from tests.packages import make_demo

    base = Path(tempfile.mkdtemp(prefix="br-unpriv-", dir="/tmp"))
    try:
        pkg, data = make_demo(base / "pkg"), base / "data"
        if os.geteuid() == 0:
            for path in [base, *base.rglob("*")]:
                os.chown(path, 65534, 65534)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOOKMARK_RESEARCH_")}
        env.update(BOOKMARK_RESEARCH_DATA_DIR=str(data), BOOKMARK_RESEARCH_CONFIG=str(base / "cfg.json"),
                   HOME=str(base))

        def cli(*args):
            return subprocess.run(_unprivileged([sys.executable, "-m", "bookmark_research", *args]),
                                  capture_output=True, text=True, env=env, timeout=60)

        first = cli("sync", str(pkg), "--source-id", "d", "--completeness", "complete")
        assert first.returncode == 0, first.stderr
        folder = pkg / TEMP_PATH.rsplit("/", 1)[0]
        folder.chmod(0)
        try:
            proc = cli("sync", str(pkg), "--source-id", "d", "--completeness", "complete")
        finally:
            folder.chmod(0o755)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert f"{folder}: cannot read (Permission denied)" in proc.stderr
        found = cli("search", "d", "--section", "A-1", "--count-only", "--json")
        assert json.loads(found.stdout)["total"] == 2  # the section inside was not deleted
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)


def test_file_name_not_utf8_is_one_line_naming_it(core, demo, tmp_path):
    bad = os.fsencode(demo / "临时栏目" / "常规链式") + b"/caf\xe9.json"
    with open(bad, "wb") as fh:
        fh.write((demo / TEMP_PATH).read_bytes().replace(b"temp-section-A-1", b"temp-section-B"))
    with pytest.raises(BookmarkResearchError, match=r"caf\\xe9.json: file name is not valid UTF-8"):
        core.sync(demo, source_id="d")
    _assert_nothing_written(core)
    media = os.fsencode(demo / "Permanent") + b"/pic\xff.png"
    os.remove(bad)
    os.makedirs(os.path.dirname(media), exist_ok=True)
    with open(media, "wb") as fh:
        fh.write(b"png")
    out = core.sync(demo, source_id="d")  # an ignored file's odd name is only escaped in the warning
    assert any("pic\\xff.png" in w for w in out["warnings"])


def test_one_size_rule_for_folders_and_zips(core, demo, tmp_path):
    """A media file over the per-file limit is ignored (never read) in a folder and in a ZIP alike."""
    (demo / "永久栏目" / "video.mp4").write_bytes(b"\0" * 5000)
    limits = Limits(max_file_bytes=4000)
    folder = read_input(demo, limits)
    archive = read_input(zip_dir(demo, tmp_path / "pkg.zip"), limits)
    assert sorted(folder.files) == sorted(archive.files) and "永久栏目/video.mp4" not in folder.files
    assert any("video.mp4" in w for w in folder.warnings) and any("video.mp4" in w for w in archive.warnings)
    (demo / "永久栏目" / "big.json").write_bytes(b"{" + b" " * 5000 + b"}")
    for source in (demo, zip_dir(demo, tmp_path / "pkg2.zip")):
        with pytest.raises(BookmarkResearchError, match="big.json.* exceeds the 4000-byte per-file limit"):
            read_input(source, limits)


def test_json_error_messages_are_complete_and_name_the_limit(core, demo):
    card = demo / TEMP_PATH
    full = card.read_text(encoding="utf-8")
    cut = full[: full.index("模型资料") + 2]  # a download cut off inside a string
    card.write_text(cut, encoding="utf-8")
    with pytest.raises(BookmarkResearchError, match=r"A-1 示例.json: invalid JSON at line \d+, column \d+: a string "
                                                    r"starts there and never ends \(is the file cut off\?\)$"):
        core.sync(demo)
    card.write_text(full[: full.index('"items"') + 9], encoding="utf-8")
    with pytest.raises(BookmarkResearchError, match=r"the file ends before the JSON is complete \(is it cut off\?\)$"):
        core.sync(demo)
    card.write_text("", encoding="utf-8")
    with pytest.raises(BookmarkResearchError, match="A-1 示例.json: the file is empty"):
        core.sync(demo)
    deep = 5000
    card.write_text('{"format": "bookmark-canvas-section", "x": ' + "[" * deep + "]" * deep + "}", encoding="utf-8")
    with pytest.raises(BookmarkResearchError, match="A-1 示例.json: JSON nested more than 1000 levels deep"):
        core.sync(demo)
    _assert_nothing_written(core)


def test_a_folder_tree_480_levels_deep_imports(core, tmp_path):
    """About 965 levels of JSON: inside the nesting limit, whatever the call depth."""
    node = '{"id": "leaf", "title": "leaf", "url": "https://e.example/leaf"}'
    for level in range(480, 0, -1):
        node = f'{{"id": "f{level}", "title": "folder {level}", "children": [{node}]}}'
    text = ('{"format": "bookmark-canvas-section", "schemaVersion": 3, "sectionType": "permanent", "slot": "A", '
            f'"title": "deep", "fileRole": "primary", "tree": {{"id": "root", "title": "", "children": [{node}]}}}}')
    (tmp_path / "deep" / "Permanent").mkdir(parents=True)
    (tmp_path / "deep" / "Permanent" / "A.json").write_text(text, encoding="utf-8")
    out = core.sync(tmp_path / "deep", source_id="deep")
    assert out["counts"]["user_folders"] == 480 and out["counts"]["bookmarks"] == 1


def test_field_path_of_a_tree_object_has_no_index(core, demo):
    data = read_json(demo / A_PATH)
    data["tree"]["title"] = 5
    write_json(demo / A_PATH, data)
    with pytest.raises(BookmarkResearchError, match=r"A书签树（永久栏目）.json: field tree\.title: "):
        core.sync(demo)
    data["tree"] = [data["tree"]]
    write_json(demo / A_PATH, data)
    with pytest.raises(BookmarkResearchError, match=r"field tree\[0\]\.title: "):
        core.sync(demo)
