"""Every core operation, registered with its input and output model."""

from __future__ import annotations

import os
import platform
import sqlite3
import tempfile
from typing import Any

from bookmark_research.core import models as m
from bookmark_research.core.app import App
from bookmark_research.core.registry import operation
from bookmark_research.index.db import read_snapshot
from bookmark_research.index.schema import SCHEMA_VERSION
from bookmark_research.index.status import require_source, source_counts, source_record


@operation("sync_package", "sync", m.SyncInput, m.SyncOutput, read_only=False, idempotent=True)
def sync_package(app: App, p: m.SyncInput) -> dict[str, Any]:
    """Import a package directory, ZIP or section JSON into a source (incremental, all or nothing)."""
    from bookmark_research.sources.manager import sync_package as run

    return run(app, p.package_path, p.source_id, p.mode, p.completeness, progress=getattr(app, "progress", None))


@operation("index_status", "status", m.StatusInput, m.StatusOutput)
def index_status(app: App, p: m.StatusInput) -> dict[str, Any]:
    """Sources, their counts, sections, versions and lifecycle state."""
    conn = app.connect(create=False)
    from bookmark_research.sources.live import watcher_status

    out: dict[str, Any] = {"database": str(app.db_path), "database_exists": conn is not None,
                           "schema_version": SCHEMA_VERSION, "watcher": watcher_status(app.data_dir), "sources": []}
    if conn is None:
        if p.source_id is not None:
            require_source(None, p.source_id)
        return out
    with read_snapshot(conn):
        if p.source_id is not None:
            require_source(conn, p.source_id)
            ids = [p.source_id]
        else:
            ids = [r[0] for r in conn.execute("SELECT source_id FROM sources ORDER BY source_id")]
        for sid in ids:
            counts = source_counts(conn, sid)
            sections = [
                {"section_id": s, "label": lab, "kind": k, "is_anchor": bool(a), "canonical_id": c, "file_path": f}
                for s, lab, k, a, c, f in conn.execute(
                    "SELECT section_id, label, kind, is_anchor, canonical_id, file_path FROM sections "
                    "WHERE source_id=? ORDER BY section_id", (sid,))
            ]
            out["sources"].append({"source_id": sid, "bookmarks": counts["bookmarks"],
                                   "unique_urls": counts["unique_urls"], "counts": counts, "sections": sections,
                                   "source": source_record(conn, sid)})
    return out


@operation("source_history", "history", m.HistoryInput, m.HistoryOutput)
def source_history(app: App, p: m.HistoryInput) -> dict[str, Any]:
    """Recorded versions of a source, newest first; each one can be restored."""
    from bookmark_research.sources.manager import history

    return history(app, p.source_id, p.limit, p.offset)


@operation("source_restore", "restore", m.RestoreInput, m.SyncOutput, read_only=False, idempotent=True)
def source_restore(app: App, p: m.RestoreInput) -> dict[str, Any]:
    """Make a recorded version current again by re-syncing its managed snapshot."""
    from bookmark_research.sources.manager import restore

    return restore(app, p.source_id, p.version_id, progress=getattr(app, "progress", None))


@operation("source_remove", "source remove", m.RemoveInput, m.RemoveOutput, read_only=False)
def source_remove(app: App, p: m.RemoveInput) -> dict[str, Any]:
    """Remove a source, its index rows and its snapshots (preview unless confirm is true)."""
    from bookmark_research.sources.manager import remove

    return remove(app, p.source_id, p.confirm)


@operation("source_merge", "source merge", m.MergeInput, m.MergeOutput, read_only=False)
def source_merge(app: App, p: m.MergeInput) -> dict[str, Any]:
    """Fold a duplicate source into one with identical content (preview unless confirm is true)."""
    from bookmark_research.sources.manager import merge

    return merge(app, p.source_id, p.into_source_id, p.confirm)


def _writable(path: os.PathLike[str] | str) -> tuple[bool, str | None]:
    """Whether a file can be created in ``path`` (or its nearest existing ancestor); leaves nothing behind."""
    from pathlib import Path

    folder = Path(path)
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        return False, f"{folder} exists but is not a directory"
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".bookmark-research-probe-"):
            pass
        return True, None
    except OSError as exc:
        return False, f"{folder} is not writable ({exc.strerror})"


@operation("doctor", "doctor", m.DoctorInput, m.DoctorOutput)
def doctor(app: App, p: m.DoctorInput) -> dict[str, Any]:
    """Check Python, SQLite FTS5/trigram support and whether the data directory is usable."""
    from bookmark_research.index.db import sqlite_supports

    fts5, trigram = sqlite_supports("unicode61"), sqlite_supports("trigram")
    try:
        sqlite3.connect(":memory:").execute("SELECT value FROM json_each('[1]')").fetchall()
        json1 = True
    except sqlite3.Error:
        json1 = False
    problems: list[str] = []
    writable, why = _writable(app.data_dir)
    if not writable:
        problems.append(f"data directory: {why}")
    db_exists = app.db_path.exists()
    db_writable = os.access(app.db_path, os.W_OK) if db_exists else None
    if db_exists and not db_writable:
        problems.append(f"database {app.db_path} is read-only")
    if not fts5:
        problems.append("this Python's SQLite lacks FTS5")
    if not json1:
        problems.append("this Python's SQLite lacks the JSON functions (folder-path and page-text search use them)")
    next_step = None
    if problems:
        next_step = ("export BOOKMARK_RESEARCH_DATA_DIR=/a/writable/folder (or pass --data-dir)" if not writable or
                     (db_exists and not db_writable) else "install a Python whose SQLite has FTS5 and JSON")
    return {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version, "fts5": fts5, "trigram": trigram,
            "json1": json1,
            "data_dir": str(app.data_dir), "data_dir_exists": app.data_dir.is_dir(), "database": str(app.db_path),
            "database_exists": db_exists,
            "data_dir_writable": writable, "database_writable": db_writable, "ready": not problems,
            "problems": problems, "next_step": next_step}


@operation("search_archive", "search-archive", m.SearchArchiveInput, m.SearchArchiveOutput)
def search_archive(app: App, p: m.SearchArchiveInput) -> dict[str, Any]:
    """BM25-ranked full-text search over archived page bodies, with snippets and where they came from."""
    from bookmark_research.evidence.index import search_archive as run

    conn = app.connect(create=False)
    if conn is None:
        return run(None, p.query, url=p.url, limit=p.limit, offset=p.offset)
    with read_snapshot(conn):
        return run(conn, p.query, url=p.url, limit=p.limit, offset=p.offset)


def _fetch_failed(result: dict[str, Any]) -> str | None:
    if result["status"] != "error":
        return None
    reasons = list(dict.fromkeys(r for p in result["pages"] for r in p.get("reasons") or []))  # every provider's
    return "no page could be read: " + "; ".join(reasons or ["no usable text"])


@operation("fetch_web", "fetch-web", m.FetchWebInput, m.FetchWebOutput, read_only=False, failure=_fetch_failed,
           open_world=True, destructive=False)  # adds to the archive, never overwrites
def fetch_web(app: App, p: m.FetchWebInput) -> dict[str, Any]:
    """Read URLs through the provider waterfall (or one provider), archive them, say who supplied each page."""
    from bookmark_research.evidence.fetch import fetch_web as run

    return run(app, p.urls, p.provider, p.max_characters, p.archive, p.raw)


def _search_failed(result: dict[str, Any]) -> str | None:
    if result["successful_provider_count"]:
        return None
    reasons = sorted({e['error'] for e in result['errors']})
    skipped = [f"{s['provider']}: needs {', '.join(s['missing'])}" for s in result["routing"]["skipped_providers"]]
    return "no search provider succeeded: " + "; ".join(reasons + skipped or ["no provider was available"])


@operation("search_web", "search-web", m.SearchWebInput, m.SearchWebOutput, failure=_search_failed, open_world=True,
           idempotent=False)
def search_web(app: App, p: m.SearchWebInput) -> dict[str, Any]:
    """Web search: primary providers concurrently, fallbacks for unresolved queries, results fused per target (RRF)."""
    from bookmark_research.providers.websearch import search_web as run

    return run([t.model_dump() for t in p.targets], p.providers, p.limit_per_target)


def _probe_failed(result: dict[str, Any]) -> str | None:
    if not result["probe_performed"] or any(p["availability"] == "reachable" for p in result["providers"]):
        return None
    return "no provider answered the probe: " + "; ".join(
        p["probe"].get("error", "") for p in result["providers"] if p["availability"] == "failed")


@operation("search_providers", "providers", m.ProvidersInput, m.ProvidersOutput, failure=_probe_failed,
           open_world=True)  # probe: true contacts the remote servers
def search_providers(app: App, p: m.ProvidersInput) -> dict[str, Any]:
    """What each provider can do here and which credentials are configured (never their values)."""
    from bookmark_research.providers.catalog import describe

    return describe(p.probe)


def _literature_failed(result: dict[str, Any]) -> str | None:
    if result["status"] != "error":
        return None
    reasons = [d.get("error") or f"{d['provider']}: needs {', '.join(d.get('missing', []))}"
               for d in result["diagnostics"]["providers"]]
    return "no scholarly provider succeeded: " + "; ".join(reasons)


@operation("literature_search", "literature", m.LiteratureInput, m.LiteratureOutput, failure=_literature_failed,
           open_world=True, idempotent=False)
def literature_search(app: App, p: m.LiteratureInput) -> dict[str, Any]:
    """Scholarly search routed by query type across OpenAlex, Semantic Scholar, Crossref, PubMed and arXiv."""
    from bookmark_research.providers.scholarly import literature_search as run

    return run(p.query, p.providers, p.mode, p.per_provider_limit, p.total_limit, p.from_year, p.to_year)


@operation("search_plan", "search-plan", m.SearchPlanInput, m.SearchPlanOutput)
def search_plan(app: App, p: m.SearchPlanInput) -> dict[str, Any]:
    """A deterministic plan of provider and native searches for a research question (runs nothing)."""
    from bookmark_research.providers.scholarly import search_plan as plan

    return plan(p.query, p.platform, p.native_search_available, p.native_search_tools, p.include_working_papers,
                p.from_year, p.to_year, p.offline)


def _settings_view(settings: Any) -> dict[str, Any]:
    from bookmark_research.config.settings import public_view, settings_path, valid_keys

    path = settings_path()
    return {"path": str(path), "exists": path.exists(), "settings": public_view(settings), "valid_keys": valid_keys()}


@operation("get_settings", "config show", m.GetSettingsInput, m.SettingsOutput)
def get_settings(app: App, p: m.GetSettingsInput) -> dict[str, Any]:
    """Effective settings: provider order, timeouts, archive, direct-fetch policy; which credentials are set."""
    from bookmark_research.config.settings import load

    return _settings_view(load())


@operation("update_settings", "config update", m.UpdateSettingsInput, m.SettingsOutput, read_only=False,
           idempotent=True)
def update_settings(app: App, p: m.UpdateSettingsInput) -> dict[str, Any]:
    """Change settings by dotted key (not credentials, nor weakening a safety guard); applies without a restart."""
    from bookmark_research.config.settings import update

    return _settings_view(update(p.changes, terminal=False))


@operation("set_setting", "config set", m.SetSettingInput, m.SettingsOutput, read_only=False, mcp=False)
def set_setting(app: App, p: m.SetSettingInput) -> dict[str, Any]:
    """Set one setting by dotted key from a terminal (credentials and safety guards too; a 0600 file)."""
    from bookmark_research.config.settings import update

    return _settings_view(update({p.key: p.value}, terminal=True))

