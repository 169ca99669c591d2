"""The read API the wiki and evaluation stages build on (bookmark_research.research.api)."""

from __future__ import annotations

import json

import pytest

from bookmark_research.errors import BookmarkResearchError, BusyError, InvalidInputError, NotFoundError, StorageError
from bookmark_research.locks import file_lock
from bookmark_research.research import api
from tests.research_support import PAGE, claim, imported, record, start

U0, U1 = "https://example.org/zero", "https://example.org/one"
QUOTE = "the service supports search and fetch."


@pytest.fixture
def session(core):
    out = start(core, [U0, U1])
    rid = out["research_id"]
    imported(core, rid, "i1", U0)
    imported(core, rid, "i2", U1, text="Calls may return partial excerpts.")
    record(core, rid, kind="source_review", source_id="s1", verdict="accepted", text="Official docs")
    claim(core, rid, "s1", QUOTE)
    claim(core, rid, "s2", "Calls may return partial excerpts.")
    claim(core, rid, "s1", "Calls  may return\npartial excerpts.")
    return out


def test_claim_evidence_fields_and_problems(core, session):
    rid = session["research_id"]
    out = api.claim_evidence(core.app, rid, "c1")
    assert (out["claim_id"], out["question_id"], out["status"], out["confidence"], out["inference"]) == (
        "c1", "q1", "active", "medium", False)
    cite = out["citations"][0]
    assert cite["valid"] is True and cite["problem"] is None and cite["match"] == "exact"
    assert cite["found_text"] == QUOTE and PAGE[cite["span"]["start"]:cite["span"]["end"]] == QUOTE
    assert cite["url"] == U0 and cite["review"] == {"verdict": "accepted", "text": "Official docs"}
    assert cite["body_file"].startswith("evidence/import-") and "\\" not in cite["body_file"]
    assert cite["artifact_sha256"]["body_file"] == cite["source_sha256"]
    assert set(cite) >= {"canonical_url", "provider", "retrieved_at", "published_at", "title", "content_kind",
                         "evidence_kind", "provenance", "inventory_ids", "bookmark_refs", "manifest_file",
                         "response_file"}
    unaccepted = api.claim_evidence(core.app, rid, "c2")["citations"][0]
    assert unaccepted["valid"] is False and "not accepted" in unaccepted["problem"]
    normalized = api.claim_evidence(core.app, rid, "c3")["citations"][0]
    assert normalized["match"] == "normalized" and normalized["valid"] is True
    assert api.eligible_claim_ids(core.app, rid) == ["c1", "c3"]
    record(core, rid, kind="retraction", claim_id="c3", text="duplicate")
    assert api.claim_evidence(core.app, rid, "c3")["status"] == "retracted"
    assert api.eligible_claim_ids(core.app, rid) == ["c1"]
    body = core.data_dir / "research" / rid / cite["body_file"]
    body.write_text(PAGE + " edited")
    broken = api.claim_evidence(core.app, rid, "c1")["citations"][0]
    assert broken["valid"] is False and "hash changed" in broken["problem"]
    assert broken["artifact_sha256"]["body_file"] != broken["source_sha256"]
    body.unlink()
    missing = api.claim_evidence(core.app, rid, "c1")["citations"][0]
    assert missing["valid"] is False and missing["artifact_sha256"]["body_file"] is None
    assert api.eligible_claim_ids(core.app, rid) == []
    with pytest.raises(NotFoundError, match="Unknown claim: c9"):
        api.claim_evidence(core.app, rid, "c9")


def test_source_text_state_directory_and_lock(core, session):
    rid = session["research_id"]
    assert api.source_text(core.app, rid, "s1") == PAGE
    assert api.session_directory(core.app, rid) == core.data_dir / "research" / rid
    state = api.read_state(core.app, rid)
    assert [c["id"] for c in state["claims"]] == ["c1", "c2", "c3"]
    assert [e["id"] for e in state["inventory"]] == state["source_scope"]["selected_inventory_ids"]
    assert state["inventory"][0]["instance_count"] == 1 and api.report_text(core.app, rid) == ""
    state["claims"].clear()  # a copy: the session is untouched
    assert len(api.read_state(core.app, rid)["claims"]) == 3
    assert api.source_freshness(core.app, rid)["state"] == "not_applicable"
    with api.session_lock(core.app, rid):
        with pytest.raises(BusyError, match="another process"):
            with file_lock(core.data_dir / "research" / rid / ".state.json.lock", timeout=0.1):
                pass
    with pytest.raises(InvalidInputError, match="research_id"):
        api.session_directory(core.app, "../x")
    with pytest.raises(NotFoundError, match="Unknown research_id"):
        api.read_state(core.app, "r-0000000000000000")
    with pytest.raises(NotFoundError, match="Unknown source"):
        api.source_text(core.app, rid, "s9")
    folder = core.data_dir / "research" / rid
    (folder / state["sources"][0]["body_file"]).write_text("x")
    with pytest.raises(BookmarkResearchError, match="hash changed"):
        api.source_text(core.app, rid, "s1")
    inv = json.loads((folder / "inventory.json").read_text())
    inv["entries"] = inv["entries"][:1]
    (folder / "inventory.json").write_text(json.dumps(inv))
    with pytest.raises(StorageError, match="inventory hash changed"):
        api.read_state(core.app, rid)
