"""Hand-edited or rewired session folders (QA B6, B7, B8): refused in one line, before budget or writes."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from bookmark_research.errors import BookmarkResearchError, InvalidInputError, StorageError
from bookmark_research.mcp.server import build_server
from tests.conftest import mcp_call, mcp_payload, run_cli
from tests.research_support import PAGE, PageSite, allow_loopback, imported, record, snapshot, start


def _folder(core, rid: str) -> Path:
    return core.data_dir / "research" / rid


def _state(core, rid: str) -> dict:
    return json.loads((_folder(core, rid) / "state.json").read_text())


def _edit(core, rid: str, change) -> None:
    path = _folder(core, rid) / "state.json"
    state = json.loads(path.read_text())
    change(state)
    path.write_text(json.dumps(state))


@pytest.mark.parametrize("sub", ["evidence", "operations", "evidence/pages", "evidence/captures", "work"])
def test_a_symlinked_session_folder_is_refused_before_budget_or_writes(core, tmp_path, sub):
    allow_loopback()
    with PageSite({"/page": (200, PAGE, "text/plain")}) as site:
        url = site.base + "/page"
        rid = start(core, [url], providers=["direct"])["research_id"]
        folder = _folder(core, rid)
        outside = tmp_path / "outside"
        shutil.move(str(folder / sub), str(outside))
        os.symlink(outside, folder / sub)
        before = snapshot(outside)
        usage = _state(core, rid)["usage"]
        for name, args in [
            ("research_fetch", {"operation_id": "f1", "question_id": "q1", "urls": [url], "reuse_archive": False}),
            ("research_import_evidence", {"operation_id": "i1", "question_id": "q1", "url": url, "text": PAGE,
                                          "provenance": {"kind": "page"}}),
            ("research_status", {}),
        ]:
            with pytest.raises(StorageError, match=f"Research folder must not be a symbolic link: .*/{re.escape(sub)}$"):
                core(name, research_id=rid, **args)
        assert site.hits == []  # nothing was requested
    assert snapshot(outside) == before and _state(core, rid)["usage"] == usage  # nothing written, nothing spent


def test_the_session_folder_itself_may_not_be_a_symlink(core, tmp_path):
    rid = start(core, ["https://example.org/a"])["research_id"]
    folder = _folder(core, rid)
    shutil.move(str(folder), str(tmp_path / "moved"))
    os.symlink(tmp_path / "moved", folder)
    with pytest.raises(StorageError, match="must not be a symbolic link"):
        imported(core, rid, "i1", "https://example.org/a")


@pytest.mark.parametrize("change,field", [
    (lambda s: s.update(usage="x"), "usage"),
    (lambda s: s["usage"].update(fetch_calls=-1), "usage.fetch_calls"),
    (lambda s: s["budget"].update(max_fetch_calls=100_000), "budget.max_fetch_calls"),
    (lambda s: s["budget"].update(max_search_calls="16"), "budget.max_search_calls"),
    (lambda s: s.update(status="bogus"), "status"),
    (lambda s: s["questions"][0].update(claim_ids=None), "questions[0].claim_ids"),
    (lambda s: s["sources"][0].update(review=[]), "sources[0].review"),
    (lambda s: s["operations"][0].update(reserved={"fetch_calls": "1"}), "operations[0].reserved.fetch_calls"),
    (lambda s: s.pop("events"), "events"),
    (lambda s: s["sources"].append(dict(s["sources"][0])), "sources"),
])
def test_state_is_checked_against_its_schema_on_every_load(core, change, field):
    rid = start(core, ["https://example.org/a"], budget={"max_fetch_calls": 1})["research_id"]
    imported(core, rid, "i1", "https://example.org/a")
    _edit(core, rid, change)
    pattern = rf"/state\.json: not a research session state \(field {re.escape(field)}[:)]"
    for name, args in [("research_status", {}), ("research_coverage", {}),
                       ("research_record", {"entry": {"kind": "gap", "question_id": "q1", "text": "x"}}),
                       ("research_fetch", {"operation_id": "f", "question_id": "q1", "urls": ["https://example.org/a"]})]:
        with pytest.raises(StorageError, match=pattern):
            core(name, research_id=rid, **args)
    proc = run_cli("research", "status", rid, data_dir=core.data_dir)
    assert proc.returncode == 1 and re.search(pattern, proc.stderr) and "internal" not in proc.stderr
    listed = core("research_status")["sessions"][0]
    assert listed["location_status"] == "invalid" and re.search(pattern, listed["error"])


def test_a_budget_raised_past_its_cap_is_never_honoured_over_mcp(core):
    rid = start(core, ["https://example.org/a"], budget={"max_fetch_calls": 1})["research_id"]
    _edit(core, rid, lambda s: s["budget"].update(max_fetch_calls=100_000))
    result = mcp_call(build_server(core.app), [("research_fetch", {
        "research_id": rid, "operation_id": "f", "question_id": "q1", "urls": ["https://example.org/a"]})])[0]
    assert result.is_error and "field budget.max_fetch_calls" in mcp_payload(result)["error"]
    assert _state(core, rid)["usage"]["fetch_calls"] == 0


def test_a_lone_surrogate_is_refused_with_the_field_and_nothing_is_written(core):
    rid = start(core, ["https://example.org/a"])["research_id"]
    before = snapshot(_folder(core, rid))
    with pytest.raises(InvalidInputError, match=r"research_record: entry\.text: .*surrogate"):
        record(core, rid, kind="gap", question_id="q1", text="\ud800")
    with pytest.raises(InvalidInputError, match=r"entries\[1\]\.citations\[0\]\.quote: .*surrogate"):
        core("research_record", research_id=rid, entries=[
            {"kind": "gap", "question_id": "q1", "text": "fine"},
            {"kind": "claim", "question_id": "q1", "statement": "s", "citations": [{"source_id": "s1", "quote": "a\udfff"}]}])
    with pytest.raises(InvalidInputError, match=r"provenance\.note: .*surrogate"):
        imported(core, rid, "i1", "https://example.org/a", provenance={"kind": "page", "note": "\ud83d"})
    assert snapshot(_folder(core, rid)) == before
    proc = run_cli("research", "record", rid, data_dir=core.data_dir,
                   input='{"kind":"gap","question_id":"q1","text":"\\ud800"}')
    assert proc.returncode == 1 and "entry.text" in proc.stderr and "internal" not in proc.stderr
    assert snapshot(_folder(core, rid)) == before
    with pytest.raises(BookmarkResearchError, match="surrogate"):
        core("research_start", brief="b\udc00", questions=[{"id": "q1", "question": "q"}])


def test_every_session_folder_is_0700_under_a_loose_umask(core):
    """QA D3: evidence/captures and evidence/pages were made 0755 by the archive writer under umask 022."""
    allow_loopback()
    old = os.umask(0o022)
    try:
        with PageSite({"/page": (200, PAGE, "text/plain")}) as site:
            rid = start(core, [site.base + "/page"], providers=["direct"])["research_id"]
            folder = _folder(core, rid)
            shutil.rmtree(folder / "evidence" / "pages", ignore_errors=True)  # as a session made before the layout included it
            shutil.rmtree(folder / "evidence" / "captures", ignore_errors=True)
            core("research_fetch", research_id=rid, operation_id="f1", question_id="q1", urls=[site.base + "/page"])
            imported(core, rid, "i1", site.base + "/page")
    finally:
        os.umask(old)
    modes = {p.relative_to(folder).as_posix(): oct(p.stat().st_mode & 0o777) for p in [folder, *folder.rglob("*")]
             if p.is_dir()}
    assert {"evidence/pages", "evidence/captures"} <= set(modes) and set(modes.values()) == {"0o700"}, modes


def test_finish_clears_what_a_killed_writer_left(core):
    """Papercut 12: kill -9 during a finish left .report.md.XXXX.tmp files that stayed after the next finish."""
    rid = start(core, ["https://example.org/a"])["research_id"]
    folder = _folder(core, rid)
    leftovers = [folder / ".report.md.k1l2.tmp", folder / ".sources.json.x9y8.tmp", folder / "operations" / ".a.json.q.tmp"]
    for path in leftovers:
        path.write_text("partial")
    record(core, rid, kind="gap", question_id="q1", text="nothing read")
    core("research_finish", research_id=rid, summary="s", status="incomplete")
    assert not any(p.exists() for p in leftovers) and (folder / "report.md").exists()
    assert not list(folder.rglob("*.tmp"))
