"""Helpers shared by the wiki tests: a research session double, page builders, folder snapshots."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from bookmark_research.wiki import evidence
from tests.wiki_fake_research import FakeResearch

TEXT = ("Research sessions can be resumed after a crash: the frozen inventory is kept. "
        "会话可恢复，清单被冻结。 The inventory is hashed on every load.")
QUOTE = "Research sessions can be resumed after a crash"
QUOTE2 = "The inventory is hashed on every load."


class Lab:
    def __init__(self, core: Any, fake: FakeResearch) -> None:
        self.core, self.fake = core, fake
        self.wiki = core.data_dir / "wiki"
        self.rid = fake.session(indexed=True)
        self.sid = fake.source(self.rid, TEXT)
        self.cid = fake.claim(self.rid, self.sid, QUOTE, statement="Sessions resume after a crash")
        self.cid2 = fake.claim(self.rid, self.sid, QUOTE2, statement="The inventory is re-hashed")

    def __call__(self, name: str, **arguments: Any) -> dict[str, Any]:
        return self.core(name, **arguments)

    def ref(self, cid: str | None = None, rid: str | None = None) -> dict[str, str]:
        return {"research_id": rid or self.rid, "claim_id": cid or self.cid}

    def page(self, title: str = "Reusable sessions", kind: str = "topic", text: str = "Sessions 可恢复 after a crash.",
             claims: list[dict[str, str]] | None = None, links: list[dict[str, str]] | None = None,
             sections: list[dict[str, Any]] | None = None, note: str = "Checked against the source") -> dict[str, Any]:
        return {"title": title, "kind": kind,
                "sections": sections or [{"heading": "Resuming", "text": text, "claims": [self.ref()] if claims is None else claims}],
                "links": links or [], "review": {"method": "human", "reviewer": "Ann", "note": note}}

    def write(self, page_id: str, page: dict[str, Any] | None = None, change_note: str = "Create page",
              **kw: Any) -> dict[str, Any]:
        return self("wiki_write", page_id=page_id, page=page or self.page(), change_note=change_note, **kw)

    def tree(self) -> dict[str, str]:
        """SHA-256 of every published file (locks and the derived search index left out)."""
        return tree(self.wiki)


def tree(root: Path) -> dict[str, str]:
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.endswith(".lock")
            and ".search" not in p.relative_to(root).parts[0]}


@pytest.fixture
def lab(core: Any, monkeypatch: pytest.MonkeyPatch) -> Lab:
    fake = FakeResearch(core.data_dir)
    monkeypatch.setattr(evidence, "research_api", lambda: fake)
    return Lab(core, fake)
