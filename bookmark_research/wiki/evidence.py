"""The wiki's one door to research sessions: claim evidence, source freshness and session locks.

Every call into :mod:`bookmark_research.research.api` goes through this module. A wiki revision stores
an *evidence snapshot* per cited claim (statement, confidence, citations with their quotes, located
spans, source hashes, reviews, provenance and the SHA-256 of every saved artifact); validation later
re-verifies the claim through the research API and compares the *substantive* part of the snapshot
(everything except review wording and artifact locations) with what was stored.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from bookmark_research.errors import BookmarkResearchError, InvalidInputError, StorageError
from bookmark_research.wiki import cache

ARTIFACTS = ("body_file", "manifest_file", "response_file")
_CITATION_KEYS = ("source_id", "inventory_ids", "bookmark_refs", "url", "canonical_url", "title", "quote", "match",
                  "span", "found_text", "source_sha256", "provider", "retrieved_at", "published_at", "review",
                  "content_kind", "evidence_kind", "provenance", "artifact_sha256", *ARTIFACTS)


def research_api() -> Any:
    """The research sessions' read API (a separate stage; imported on first use)."""
    from bookmark_research.research import api

    return api


class ClaimCheck(NamedTuple):
    snapshot: dict[str, Any] | None  # the evidence snapshot when the claim can be cited
    error: str | None  # why it cannot (wiki wording), else None
    digest: str | None = None  # :func:`digest` of the snapshot


def _snapshot(raw: dict[str, Any]) -> dict[str, Any]:
    citations = []
    for c in raw.get("citations") or []:
        cite = {key: c.get(key) for key in _CITATION_KEYS}
        review = c.get("review") or {}
        cite["review"] = {"verdict": review.get("verdict"), "text": review.get("text")}
        cite["inventory_ids"] = list(c.get("inventory_ids") or [])
        cite["bookmark_refs"] = list(c.get("bookmark_refs") or [])
        cite["artifact_sha256"] = dict(c.get("artifact_sha256") or {})
        citations.append(cite)
    return {"research_id": raw["research_id"], "claim_id": raw["claim_id"], "question_id": raw.get("question_id"),
            "statement": raw.get("statement"), "confidence": raw.get("confidence"),
            "inference": raw.get("inference"), "citations": citations}


def digest(snapshot: dict[str, Any]) -> str:
    """SHA-256 of the substantive part of a snapshot (canonical JSON)."""
    import hashlib
    import json

    text = json.dumps(substantive(snapshot), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def substantive(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The part of a snapshot whose change invalidates a page (review wording and paths excluded)."""
    out = dict(snapshot)
    out["citations"] = [{k: ({"verdict": v["verdict"]} if k == "review" else v) for k, v in c.items()
                         if k not in ARTIFACTS} for c in snapshot["citations"]]
    return out


def _problem(raw: dict[str, Any]) -> str | None:
    """The wiki's reason for refusing this claim's evidence, or None when it can be cited."""
    if raw.get("status") != "active":
        return f"Wiki cannot use a retracted claim: {raw['claim_id']}"
    citations = raw.get("citations") or []
    for c in citations:
        if (c.get("review") or {}).get("verdict") != "accepted":
            return f"Wiki requires an accepted source review: {c.get('source_id')}"
    for c in citations:
        if not c.get("valid"):
            detail = f" ({c['problem']})" if c.get("problem") else ""
            return f"Wiki citation no longer matches saved evidence: {raw['claim_id']}/{c.get('source_id')}{detail}"
    if not citations:
        return "Wiki claims require saved citations"
    return None


class Evidence:
    """Claim checks and freshness for one operation, each asked of the research API at most once."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._claims: dict[tuple[str, str], ClaimCheck] = {}
        self._freshness: dict[str, dict[str, Any]] = {}
        self._folders: dict[str, Path | BookmarkResearchError] = {}
        self._idents: dict[Any, cache.Identity | None] = {}  # file and folder identities, taken once here
        self._copies: dict[Any, str | None] = {}  # the wiki's evidence copies: rel -> SHA-256 (None: absent)
        self.verified_copies: set[tuple[str, str]] = set()  # (copy, expected SHA-256) found to hold

    def folder(self, research_id: str) -> Path:
        """The session's folder (asked once per operation); raises as the research API does."""
        if research_id not in self._folders:
            try:
                self._folders[research_id] = Path(research_api().session_directory(self.app, research_id))
            except BookmarkResearchError as exc:
                self._folders[research_id] = exc
        found = self._folders[research_id]
        if isinstance(found, BookmarkResearchError):
            raise found
        return found

    def check(self, research_id: str, claim_id: str) -> ClaimCheck:
        key = (research_id, claim_id)
        if key not in self._claims:
            self._claims[key] = self._check(research_id, claim_id)
        return self._claims[key]

    def _check(self, research_id: str, claim_id: str) -> ClaimCheck:
        api = research_api()
        try:
            folder = self.folder(research_id)
        except BookmarkResearchError as exc:
            return ClaimCheck(None, exc.message)
        memo_key = (str(folder), claim_id)
        session_ident = self._identity(folder, folder=True)
        remembered = cache.CLAIMS.get(memo_key, session_ident)
        if remembered is not None:
            artifacts, result = remembered
            if all(self._identity(path) == ident for path, ident in artifacts):
                return result
        try:
            raw = api.claim_evidence(self.app, research_id, claim_id)
        except BookmarkResearchError as exc:
            return ClaimCheck(None, exc.message)
        problem = _problem(raw)
        snapshot = None if problem else _snapshot(raw)
        result = ClaimCheck(snapshot, problem, None if snapshot is None else digest(snapshot))
        paths = {folder.joinpath(*c[key].split("/")) for c in raw.get("citations") or [] for key in ARTIFACTS
                 if isinstance(c.get(key), str)}
        artifacts = [(path, cache.identity(path)) for path in sorted(paths)]
        if all(ident is not None for _, ident in artifacts):
            cache.CLAIMS.put(memo_key, session_ident, (artifacts, result))
        return result

    def _identity(self, path: Path, folder: bool = False) -> cache.Identity | None:
        """:func:`cache.identity` (or :func:`cache.folder_identity`) of ``path``, taken once per operation."""
        key = (folder, path)
        if key not in self._idents:
            self._idents[key] = cache.folder_identity(path) if folder else cache.identity(path)
        return self._idents[key]

    def require(self, refs: Mapping[tuple[str, str], str]) -> list[dict[str, Any]]:
        """Snapshots for ``refs`` in order; the first claim that cannot be cited refuses the write with an
        error naming where it is cited (``refs`` maps each claim to that field path)."""
        snapshots = []
        for (research_id, claim_id), where in refs.items():
            result = self.check(research_id, claim_id)
            if result.error is not None:
                raise InvalidInputError(f"{where} ({research_id}/{claim_id}): {result.error}")
            snapshots.append(result.snapshot)
        return snapshots

    def freshness(self, research_id: str) -> dict[str, Any]:
        """The session's source freshness; ``state: unknown`` when it cannot be determined.

        A session over a plain URL list (``not_applicable``) depends on nothing but its own files, so
        that answer is remembered while they are unchanged; any other is asked for on every operation
        (it depends on the bookmark index and, for live sources, on their folders).
        """
        if research_id not in self._freshness:
            try:
                folder = self.folder(research_id)
                ident = self._identity(folder, folder=True)
                fresh = cache.FRESHNESS.get(str(folder), ident)
                if fresh is None:
                    fresh = dict(research_api().source_freshness(self.app, research_id))
                    if fresh.get("state") == "not_applicable":
                        cache.FRESHNESS.put(str(folder), ident, fresh)
            except BookmarkResearchError as exc:
                fresh = {"state": "unknown", "requires_review": False, "frozen_input_version": None,
                         "current_input_version": None, "basis": exc.message}
            self._freshness[research_id] = fresh
        return self._freshness[research_id]

    @contextlib.contextmanager
    def locks(self, research_ids: Iterable[str]) -> Iterator[None]:
        """Hold the cited sessions' own locks, in sorted order (the wiki's index lock comes after)."""
        api = research_api()
        with contextlib.ExitStack() as stack:
            for research_id in sorted(set(research_ids)):
                stack.enter_context(api.session_lock(self.app, research_id))
            yield

    def copy_digest(self, wiki: Any, rel: str) -> str | None:
        """SHA-256 of the wiki's own file ``rel`` (a copy of saved evidence); None when it is missing or
        unreadable (lint reports the links to it). Taken once per operation, remembered while unchanged."""
        from bookmark_research.wiki.store import sha256

        if rel not in self._copies:
            try:
                path = str(wiki.path(rel))
                ident = cache.identity(path)
                found = cache.COPIES.get(path, ident)
                if found is None:
                    found = sha256(wiki.read_bytes(rel))
                    cache.COPIES.put(path, ident, found)
            except BookmarkResearchError:
                found = None
            self._copies[rel] = found
        return self._copies[rel]

    def artifact(self, research_id: str, rel: str, expected_sha256: str) -> bytes:
        """A saved artifact of a session (``rel`` inside its folder), only if its hash still matches."""
        from bookmark_research.wiki.store import sha256

        parts = rel.split("/")
        if rel.startswith("/") or "\\" in rel or any(p in ("", ".", "..") for p in parts):
            raise StorageError(f"Wiki citation artifact path leaves its session: {rel}")
        folder = self.folder(research_id)
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(folder.joinpath(*parts), flags)
            with os.fdopen(fd, "rb") as fh:
                data = fh.read()
        except OSError:
            raise InvalidInputError(f"Wiki citation no longer matches saved evidence: {research_id}/{rel} is missing") \
                from None
        if sha256(data) != expected_sha256:
            raise InvalidInputError(f"Wiki citation no longer matches saved evidence: {research_id}/{rel} changed")
        return data


def cited_research_ids(evidence: list[dict[str, Any]]) -> list[str]:
    return sorted({snap["research_id"] for snap in evidence})
