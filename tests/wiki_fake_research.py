"""A stand-in for ``bookmark_research.research.api`` (tests only), following its published contract.

Sessions are folders under ``<data dir>/research/<rid>/`` with a ``state.json`` and saved artifacts, so
a test can retract a claim, change a review, edit a saved body or change the session's input the way
the real stage would, and the wiki sees it through the same five functions.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bookmark_research.errors import InvalidInputError, NotFoundError
from bookmark_research.locks import file_lock

ARTIFACTS = ("body_file", "manifest_file", "response_file")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class FakeResearch:
    def __init__(self, data_dir: Path) -> None:
        self.root = Path(data_dir) / "research"
        self.counter = 0

    # --- the API ------------------------------------------------------------------------------

    def session_directory(self, app: Any, research_id: str) -> Path:
        if not research_id.startswith("r-") or len(research_id) != 18:
            raise InvalidInputError(f"Invalid research_id: {research_id}")
        folder = self.root / research_id
        if not (folder / "state.json").is_file():
            raise NotFoundError(f"Unknown research session: {research_id}")
        return folder

    def read_state(self, app: Any, research_id: str) -> dict[str, Any]:
        return json.loads((self.session_directory(app, research_id) / "state.json").read_text())

    @contextlib.contextmanager
    def session_lock(self, app: Any, research_id: str) -> Iterator[None]:
        with file_lock(self.session_directory(app, research_id) / ".state.json.lock"):
            yield

    def claim_evidence(self, app: Any, research_id: str, claim_id: str) -> dict[str, Any]:
        folder = self.session_directory(app, research_id)
        state = self.read_state(app, research_id)
        claim = state["claims"].get(claim_id)
        if claim is None:
            raise NotFoundError(f"Unknown claim: {claim_id}")
        citations = []
        for cite in claim["citations"]:
            source = state["sources"][cite["source_id"]]
            hashes = {}
            for key in ARTIFACTS:
                path = folder / source[key] if source.get(key) else None
                hashes[key] = _sha(path.read_bytes()) if path is not None and path.is_file() else None
            body = folder / source["body_file"]
            problem = None
            if not body.is_file():
                problem = "saved body missing"
            else:
                text = body.read_bytes()
                if _sha(text) != source["sha256"]:
                    problem = "saved body hash changed"
                elif text.decode()[cite["span"]["start"]:cite["span"]["end"]] != cite["found_text"]:
                    problem = "quote no longer at its span"
            if problem is None and source["review"]["verdict"] != "accepted":
                problem = f"Source {cite['source_id']} is not accepted"
            citations.append({
                "source_id": cite["source_id"], "quote": cite["quote"], "match": "exact", "span": cite["span"],
                "found_text": cite["found_text"], "source_sha256": source["sha256"], "url": source["url"],
                "canonical_url": source["url"], "provider": "import", "retrieved_at": "2026-11-30T10:00:00Z",
                "published_at": None, "title": source["title"], "review": dict(source["review"]),
                "content_kind": "text", "evidence_kind": "page", "provenance": source.get("provenance", "page"),
                "inventory_ids": source.get("inventory_ids", []), "bookmark_refs": source.get("bookmark_refs", []),
                **{key: source.get(key) for key in ARTIFACTS}, "artifact_sha256": hashes,
                "valid": problem is None, "problem": problem})
        return {"research_id": research_id, "claim_id": claim_id, "question_id": "q1",
                "statement": claim["statement"], "confidence": "high", "inference": False,
                "status": claim["status"], "citations": citations}

    def source_text(self, app: Any, research_id: str, source_id: str) -> str:
        state = self.read_state(app, research_id)
        return (self.session_directory(app, research_id) / state["sources"][source_id]["body_file"]).read_text()

    def source_freshness(self, app: Any, research_id: str) -> dict[str, Any]:
        state = self.read_state(app, research_id)
        fresh = state["freshness"]
        out = {"frozen_input_version": fresh["frozen"], "current_input_version": fresh["current"],
               "state": fresh["state"], "requires_review": fresh["state"] == "changed", "basis": "fake"}
        if fresh.get("removed"):
            out["source_states"] = {"src": {"state": "removed", "changed": True}}
        return out

    def eligible_claim_ids(self, app: Any, research_id: str) -> list[str]:
        return [cid for cid in self.read_state(app, research_id)["claims"]
                if not self.claim_evidence(app, research_id, cid)["citations"] is None]

    # --- building and changing sessions ---------------------------------------------------------

    def _save(self, research_id: str, state: dict[str, Any]) -> None:
        (self.root / research_id / "state.json").write_text(json.dumps(state))

    def _state(self, research_id: str) -> dict[str, Any]:
        return json.loads((self.root / research_id / "state.json").read_text())

    def session(self, *, indexed: bool = False) -> str:
        self.counter += 1
        rid = f"r-{self.counter:016x}"
        (self.root / rid / "sources").mkdir(parents=True)
        state = {"claims": {}, "sources": {},
                 "freshness": {"frozen": "v1" if indexed else None, "current": "v1" if indexed else None,
                               "state": "unchanged" if indexed else "not_applicable"}}
        self._save(rid, state)
        return rid

    def source(self, rid: str, text: str, verdict: str = "accepted", url: str = "https://example.com/page",
               provenance: str = "page") -> str:
        state = self._state(rid)
        sid = f"s{len(state['sources']) + 1}"
        folder = self.root / rid / "sources" / sid
        folder.mkdir(parents=True)
        (folder / "body.txt").write_text(text)
        (folder / "manifest.json").write_text(json.dumps({"url": url}))
        state["sources"][sid] = {"url": url, "title": f"Page {sid}", "sha256": _sha(text.encode()),
                                 "review": {"verdict": verdict, "text": "checked"}, "provenance": provenance,
                                 "body_file": f"sources/{sid}/body.txt", "manifest_file": f"sources/{sid}/manifest.json",
                                 "response_file": None, "inventory_ids": ["u1"], "bookmark_refs": [{"item_id": "b1"}]}
        self._save(rid, state)
        return sid

    def claim(self, rid: str, sid: str, quote: str, statement: str = "A finding") -> str:
        state = self._state(rid)
        body = (self.root / rid / state["sources"][sid]["body_file"]).read_text()
        start = body.index(quote)
        cid = f"c{len(state['claims']) + 1}"
        state["claims"][cid] = {"statement": statement, "status": "active", "citations": [
            {"source_id": sid, "quote": quote, "span": {"start": start, "end": start + len(quote)},
             "found_text": quote}]}
        self._save(rid, state)
        return cid

    def retract(self, rid: str, cid: str) -> None:
        state = self._state(rid)
        state["claims"][cid]["status"] = "retracted"
        self._save(rid, state)

    def review(self, rid: str, sid: str, verdict: str, text: str = "checked") -> None:
        state = self._state(rid)
        state["sources"][sid]["review"] = {"verdict": verdict, "text": text}
        self._save(rid, state)

    def edit_body(self, rid: str, sid: str, text: str) -> None:
        state = self._state(rid)
        (self.root / rid / state["sources"][sid]["body_file"]).write_text(text)

    def resync(self, rid: str, version: str) -> None:
        """The session's indexed input changed: the current input version is now ``version``."""
        state = self._state(rid)
        state["freshness"].update(current=version, state="changed" if version != state["freshness"]["frozen"]
                                  else "unchanged")
        self._save(rid, state)

    def remove_input(self, rid: str) -> None:
        state = self._state(rid)
        state["freshness"].update(current=None, state="changed", removed=True)
        self._save(rid, state)
