"""research_start: validation before anything is written, the frozen inventory, scope and budgets."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from bookmark_research.errors import BookmarkResearchError
from bookmark_research.research.ids import inventory_id, url_instance_id
from tests.research_support import start

U0, U1 = "https://example.org/zero", "https://example.org/one"


def _root(core):
    return core.data_dir / "research"


@pytest.mark.parametrize("args,match", [
    ({"brief": "   "}, "brief"),
    ({"questions": []}, "questions"),
    ({"questions": [{"id": "q1", "question": "a"}, {"id": "q1", "question": "b"}]}, "Question ids must be unique"),
    ({"budget": {"max_fetch_calls": True}}, "max_fetch_calls"),
    ({"budget": {"max_rounds": -1}}, "max_rounds"),
    ({"budget": {"max_rounds": 41}}, "max_rounds"),
    ({"budget": {"max_pages": 3}}, "max_pages"),
    ({"providers": ["exa", "exa"]}, "providers"),
    ({"providers": ["bing"]}, "providers"),
    ({"source_ids": [None]}, "source_ids"),
    ({"scope": None}, "scope"),
    ({"urls": []}, "urls"),
    ({"urls": "https://example.org/"}, "urls"),
    ({"urls": [None]}, "urls"),
    ({"urls": [""]}, "urls"),
    ({"urls": [f"https://e.org/{i}" for i in range(10_001)]}, "urls"),
    ({"urls": [U0], "source_ids": ["demo"]}, "Choose urls or indexed source_ids"),
    ({"urls": [U0], "inventory_ids": ["u-1"]}, "requires explicit scope_mode=subset"),
    ({"urls": [U0], "scope_mode": "subset"}, "explicit subset needs"),
    ({"urls": [U0], "scope_mode": "subset", "inventory_ids": ["u-nope"]}, "explicit subset needs"),
    ({"questions": [{"id": "../q", "question": "a"}]}, "questions"),
    ({"questions": [{"id": "q1", "question": "a", "extra": 1}]}, "extra"),
    ({"surprise": 1}, "surprise"),
    ({"source_ids": ["demo"]}, "Sync the bookmark package"),
])
def test_invalid_start_creates_nothing(core, args, match):
    base = {"brief": "b", "questions": [{"id": "q1", "question": "q?"}]}
    with pytest.raises(BookmarkResearchError, match=match):
        core("research_start", **{**base, **args})
    assert not _root(core).exists()
    assert not (core.data_dir / "research-locations.json").exists()
    assert not (core.data_dir / "index.sqlite3").exists()


def test_url_list_freezes_every_instance_offline(core):
    out = start(core, [U1, U0, U1, "file:///notes/reference.pdf"], budget={"max_fetch_calls": 0})
    scope = out["source_scope"]
    assert (scope["mode"], scope["input_url_count"], scope["input_instance_count"]) == ("whole", 3, 4)
    assert out["source_ids"] == [] and not (core.data_dir / "index.sqlite3").exists()
    inv = core("research_inventory", research_id=out["research_id"])
    items = {e["original_url"]: e for e in inv["items"]}
    assert [i["input_index"] for i in items[U1]["instances"]] == [0, 2]
    assert items[U1]["id"] == inventory_id(U1) and items[U1]["instances"][1]["instance_id"] == url_instance_id(2, U1)
    assert len({i["instance_id"] for e in inv["items"] for i in e["instances"]}) == 4
    local = items["file:///notes/reference.pdf"]
    assert (local["retrieval_url"], local["url_kind"]) == (None, "local")
    assert [e["id"] for e in inv["items"]] == sorted(e["id"] for e in inv["items"])
    cov = core("research_coverage", research_id=out["research_id"])
    assert cov["metrics"]["accounted_for"] == {"count": 0, "total": 3, "rate": 0.0} and not cov["completion_ready"]
    core.reopen()
    assert core("research_inventory", research_id=out["research_id"])["items"] == inv["items"]
    folder = _root(core) / out["research_id"]
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert {p.name for p in folder.iterdir()} >= {"state.json", "inventory.json", "context.json", "work", "operations"}


def test_default_fetch_budget_grows_with_scope_and_explicit_is_kept(core):
    urls = [f"https://example.org/{i}" for i in range(207)]
    out = start(core, urls)
    plan = out["initial_fetch_plan"]
    assert (plan["minimum_required"], out["budget"]["max_fetch_calls"], plan["call_shortfall"]) == (26, 38, 0)
    assert [core("research_inventory", research_id=out["research_id"], offset=o)["next_offset"]
            for o in (0, 100, 200)] == [100, 200, None]
    explicit = start(core, urls, budget={"max_fetch_calls": 12})
    plan = explicit["initial_fetch_plan"]
    assert explicit["budget"]["max_fetch_calls"] == 12 and plan["budget_source"] == "explicit"
    assert (plan["minimum_required"], plan["call_shortfall"], plan["urls_beyond_capacity"]) == (26, 14, 111)
    capped = start(core, [f"https://example.org/{i}" for i in range(641)])
    plan = capped["initial_fetch_plan"]
    assert (capped["budget"]["max_fetch_calls"], plan["minimum_required"], plan["call_shortfall"],
            plan["urls_beyond_capacity"]) == (80, 81, 1, 1)
    per_url = start(core, urls[:20], providers=["direct"])
    assert per_url["initial_fetch_plan"]["max_urls_per_call"] == 1 and per_url["budget"]["max_fetch_calls"] == 32


def test_explicit_subset_and_bounded_previews(core):
    urls = [f"https://example.org/{i}" for i in range(207)]
    ids = sorted(inventory_id(u) for u in urls)
    out = start(core, urls, scope_mode="subset", inventory_ids=[ids[0], ids[-1]], budget={"max_fetch_calls": 0})
    scope = out["source_scope"]
    assert (scope["input_url_count"], scope["selected_url_count"], scope["omitted_inventory_ids_total"]) == (207, 2, 205)
    assert scope["omitted_inventory_ids_truncated"] and len(scope["omitted_inventory_ids"]) == 20
    assert core("research_inventory", research_id=out["research_id"])["inventory_ids"] == [ids[0], ids[-1]]
    big = start(core, [f"https://example.org/{i}" for i in range(3000)])
    assert len(json.dumps(big["source_scope"])) < 5000 and len(json.dumps(big)) < 50_000
    assert len(json.dumps(core("research_inventory", research_id=big["research_id"], limit=1))) < 10_000
    context = json.loads((_root(core) / big["research_id"] / "context.json").read_text())
    assert len(context["source_scope"]["selected_inventory_ids"]) == 3000 and len(context["bookmarks"]) == 3000


def test_tampered_inventory_and_symlinked_state_are_refused(core):
    out = start(core, [U0, U1])
    rid, folder = out["research_id"], _root(core) / out["research_id"]
    inv = json.loads((folder / "inventory.json").read_text())
    inv["entries"].pop()
    (folder / "inventory.json").write_text(json.dumps(inv))
    with pytest.raises(BookmarkResearchError, match="inventory hash changed"):
        core("research_inventory", research_id=rid)
    with pytest.raises(BookmarkResearchError, match="inventory hash changed"):
        core("research_status", research_id=rid)
    other = start(core, [U0])
    folder = _root(core) / other["research_id"]
    shutil.move(folder / "state.json", core.data_dir / "elsewhere.json")
    os.symlink(core.data_dir / "elsewhere.json", folder / "state.json")
    with pytest.raises(BookmarkResearchError, match="symbolic link"):
        core("research_status", research_id=other["research_id"])


def test_bad_ids_and_output_directory_in_a_package(core, tmp_path, demo):
    for bad in ("../x", "r-123", "r-ABCDEF0123456789"):
        with pytest.raises(BookmarkResearchError, match="research_id"):
            core("research_status", research_id=bad)
    with pytest.raises(BookmarkResearchError, match="Unknown research_id"):
        core("research_status", research_id="r-0123456789abcdef")
    with pytest.raises(BookmarkResearchError, match="outside canvas package"):
        start(core, [U0], output_directory=str(demo / "Permanent" / "research"))
    with pytest.raises(BookmarkResearchError, match="absolute"):
        start(core, [U0], output_directory="relative/dir")
    placed = start(core, [U0], output_directory=str(tmp_path / "elsewhere"))
    assert placed["output"]["placement"] == "explicit"
    assert placed["directory"] == str(tmp_path / "elsewhere" / placed["research_id"])
    core.reopen()
    listed = core("research_status")
    assert any(s["research_id"] == placed["research_id"] and s["location_status"] == "ok" for s in listed["sessions"])
    assert core("research_status", research_id=placed["research_id"])["status"] == "active"
    with pytest.raises(BookmarkResearchError, match="section requires research_id"):
        core("research_status", section="claims")


def test_indexed_source_scope_focus_refs_and_private_fields(core, demo):
    core.sync(demo, source_id="demo")
    whole = core("research_start", brief="b", questions=[{"id": "q1", "question": "q"}], source_ids=["demo"])
    inv = core("research_inventory", research_id=whole["research_id"])["items"]
    duplicated = next(e for e in inv if len(e["instances"]) >= 2)
    refs = [{"source_id": "demo", "section_id": i["section_id"], "item_id": i["item_id"]}
            for i in duplicated["instances"]]
    focus = core("research_start", brief="b", questions=[{"id": "q1", "question": "q"}], bookmark_refs=refs)
    assert focus["source_scope"]["selected_url_count"] == whole["source_scope"]["selected_url_count"]
    assert focus["source_scope"]["focus_bookmark_refs"] == refs
    subset = core("research_start", brief="b", questions=[{"id": "q1", "question": "q"}], bookmark_refs=refs,
                  scope_mode="subset")
    assert subset["source_scope"]["selected_url_count"] == 1
    context = json.loads((_root(core) / subset["research_id"] / "context.json").read_text())
    assert len(context["bookmarks"]) == len(refs)
    for record in context["bookmarks"]:
        assert not {"note", "tags", "raw_json"} & set(record)
    state_text = (_root(core) / subset["research_id"] / "state.json").read_text()
    assert '"note"' not in state_text and "raw_json" not in state_text
    with pytest.raises(BookmarkResearchError, match="bookmark_ref must identify one bookmark"):
        core("research_start", brief="b", questions=[{"id": "q1", "question": "q"}],
             bookmark_refs=[{"source_id": "demo", "section_id": "no-such-section", "item_id": refs[0]["item_id"]}])


def test_frozen_scope_survives_a_resync(core, demo, tmp_path):
    core.sync(demo, source_id="demo")
    out = core("research_start", brief="b", questions=[{"id": "q1", "question": "q"}], source_ids=["demo"])
    rid = out["research_id"]
    before = core("research_inventory", research_id=rid)
    assert core("research_status", research_id=rid)["source_freshness"]["state"] == "unchanged"
    section = next(demo.rglob("A-1 *.json"))
    data = json.loads(section.read_text())
    data["items"].append({"id": "tempId_new", "sectionId": data["id"], "type": "bookmark", "title": "New page",
                          "url": "https://new.example/page"})
    section.write_text(json.dumps(data))
    core.sync(demo, source_id="demo")
    after = core("research_inventory", research_id=rid)
    assert after["inventory_ids"] == before["inventory_ids"] and after["source_scope"] == before["source_scope"]
    freshness = core("research_status", research_id=rid)["source_freshness"]
    assert freshness["state"] == "changed" and freshness["requires_review"] is True


def test_frozen_provider_lists_and_insufficient_budget_in_the_report(core):
    from bookmark_research.config.settings import update

    out = start(core, [f"https://example.org/{i}" for i in range(207)], budget={"max_fetch_calls": 12})
    assert (out["providers"], out["search_fallback_providers"], out["fetch_providers"]) == (
        ["exa", "parallel"], ["tavily", "jina"], ["exa", "parallel", "jina", "direct"])
    update({"search.providers": ["tavily"], "fetch.providers": ["direct"]}, terminal=False)
    again = core("research_status", research_id=out["research_id"])
    assert again["providers"] == ["exa", "parallel"] and again["fetch_providers"][0] == "exa"
    core("research_record", research_id=out["research_id"],
         entry={"kind": "gap", "question_id": "q1", "text": "No budget to read everything"})
    core("research_finish", research_id=out["research_id"], summary="Stopped early", status="incomplete")
    report = (core.data_dir / "research" / out["research_id"] / "report.md").read_text()
    assert ("reading all 207 URLs takes at least 26 fetch calls (up to 8 URLs per call); 12 were configured — 14 "
            "short, so 111 URLs are beyond it." in report)
    assert "The complete scope is retained." in report and "No supported answer recorded." in report
