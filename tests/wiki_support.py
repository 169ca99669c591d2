"""Helpers shared by the wiki tests: real research sessions over an indexed sample, page builders, snapshots."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.packages import make_demo

TEXT = ("Research sessions can be resumed after a crash: the frozen inventory is kept. "
        "会话可恢复，清单被冻结。 The inventory is hashed on every load.")
QUOTE = "Research sessions can be resumed after a crash"
QUOTE2 = "The inventory is hashed on every load."


class Lab:
    """A data directory with the demo package indexed as source ``demo`` and one research session over it
    (``rid``) holding an accepted source ``sid`` (TEXT) and two active claims (``cid``: QUOTE, ``cid2``)."""

    def __init__(self, core: Any, package: Path) -> None:
        self.core, self.package = core, package
        self.wiki = core.data_dir / "wiki"
        core.sync(package, source_id="demo")
        self.imports = 0
        self.rid = self.session()
        self.url = self("research_inventory", research_id=self.rid, limit=1)["items"][0]["original_url"]
        self.sid = self.source(self.rid, TEXT)
        self.cid = self.claim(self.rid, self.sid, QUOTE, statement="Sessions resume after a crash")
        self.cid2 = self.claim(self.rid, self.sid, QUOTE2, statement="The inventory is re-hashed")

    def __call__(self, name: str, **arguments: Any) -> dict[str, Any]:
        return self.core(name, **arguments)

    # --- research sessions ---------------------------------------------------------------------

    def session(self) -> str:
        return self("research_start", brief="What do these bookmarks say about sessions?",
                    questions=[{"id": "q1", "question": "How do sessions survive a crash?"}],
                    source_ids=["demo"])["research_id"]

    def source(self, rid: str, text: str, verdict: str | None = "accepted", kind: str = "page",
               url: str | None = None) -> str:
        """An imported page (by default one of the inventory's bookmarks), reviewed with ``verdict``."""
        self.imports += 1
        out = self("research_import_evidence", research_id=rid, operation_id=f"import-{self.imports}",
                   question_id="q1", url=url or getattr(self, "url", "https://example.com/sessions"), text=text, provenance={"kind": kind, "retrieved_at": "2026-11-30T10:00:00Z"})
        sid = out["source"]["id"]
        if verdict is not None:
            self.review(rid, sid, verdict)
        return sid

    def claim(self, rid: str, sid: str, quote: str, statement: str = "A finding") -> str:
        out = self("research_record", research_id=rid, entry={
            "kind": "claim", "question_id": "q1", "statement": statement,
            "citations": [{"source_id": sid, "quote": quote}]})
        return out["id"]

    def review(self, rid: str, sid: str, verdict: str, text: str = "Read in full") -> None:
        self("research_record", research_id=rid, entry={"kind": "source_review", "source_id": sid,
                                                        "verdict": verdict, "text": text})

    def retract(self, rid: str, cid: str) -> None:
        self("research_record", research_id=rid, entry={"kind": "retraction", "claim_id": cid,
                                                        "text": "Overstated"})

    def folder(self, rid: str) -> Path:
        return self.core.data_dir / "research" / rid

    def artifact(self, rid: str, sid: str, key: str = "body_file") -> Path:
        state = json.loads((self.folder(rid) / "state.json").read_text())
        source = next(s for s in state["sources"] if s["id"] == sid)
        return self.folder(rid) / source[key]

    def copy(self, rid: str, sid: str, key: str = "body_file") -> Path:
        """The wiki's copy of a session artifact."""
        return self.wiki / "evidence" / rid / self.artifact(rid, sid, key).relative_to(self.folder(rid)).as_posix()

    def edit_body(self, rid: str, sid: str, text: str) -> None:
        self.artifact(rid, sid).write_text(text, encoding="utf-8")

    def resync(self, title: str) -> str:
        """Change the indexed package (one more bookmark) and sync it; returns the new input version."""
        section = next(self.package.rglob("A-1 *.json"))
        data = json.loads(section.read_text())
        data["items"].append({"id": f"tempId_{len(data['items'])}", "sectionId": data["id"], "type": "bookmark",
                              "title": title, "url": f"https://new.example/{len(data['items'])}"})
        section.write_text(json.dumps(data))
        self.core.sync(self.package, source_id="demo")
        return self.input_version(self.rid)

    def input_version(self, rid: str) -> str:
        return self("research_status", research_id=rid)["source_freshness"]["current_input_version"]

    def remove_input(self) -> None:
        self("source_remove", source_id="demo", confirm=True)

    # --- wiki pages ----------------------------------------------------------------------------

    def ref(self, cid: str | None = None, rid: str | None = None) -> dict[str, str]:
        return {"research_id": rid or self.rid, "claim_id": cid or self.cid}

    def page(self, title: str = "Reusable sessions", kind: str = "topic", text: str = "Sessions 可恢复 after a crash.",
             claims: list[dict[str, str]] | None = None, links: list[dict[str, str]] | None = None,
             sections: list[dict[str, Any]] | None = None, note: str = "Checked against the source") -> dict[str, Any]:
        return {"title": title, "kind": kind,
                "sections": sections or [{"heading": "Resuming", "text": text,
                                          "claims": [self.ref()] if claims is None else claims}],
                "links": links or [], "review": {"method": "human", "reviewer": "Ann", "note": note}}

    def write(self, page_id: str, page: dict[str, Any] | None = None, change_note: str = "Create page",
              **kw: Any) -> dict[str, Any]:
        return self("wiki_write", page_id=page_id, page=page or self.page(), change_note=change_note, **kw)

    def tree(self) -> dict[str, str]:
        """SHA-256 of every published file (locks and derived search/cache data left out)."""
        return tree(self.wiki)


def tree(root: Path) -> dict[str, str]:
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.endswith(".lock")
            and p.relative_to(root).parts[0] not in (".search", ".cache")}


@pytest.fixture
def lab(core: Any, tmp_path: Path) -> Lab:
    return Lab(core, make_demo(tmp_path / "export"))
