"""Research-session operations, registered with their models (one core; the CLI and MCP are generated)."""

from __future__ import annotations

from typing import Any

from bookmark_research.core import research_models as m
from bookmark_research.core.app import App
from bookmark_research.core.registry import operation
from bookmark_research.errors import InvalidInputError


def _evidence_failed(result: dict[str, Any]) -> str | None:
    if result.get("status") == "pending":  # a replay of an operation interrupted before its result was saved
        return (f"operation {result.get('operation_id')} is still pending: it was interrupted before its result "
                "was saved and keeps its reservation; record an interruption to continue")
    if result.get("status") != "error":
        return None
    return result.get("error") or "no provider returned usable results"


@operation("research_start", "research start", m.ResearchStartInput, m.ResearchOverview, read_only=False,
           destructive=False, terminal_only_fields=("output_directory",), terminal_only_alternative="the output.directory setting")
def research_start(app: App, p: m.ResearchStartInput) -> dict[str, Any]:
    """Start a research session: freeze the input inventory (URLs or indexed bookmarks), questions and budget."""
    from bookmark_research.research.overview import overview
    from bookmark_research.research.start import start

    session, output = start(app, p)
    return {**overview(session), "output": output}


@operation("research_status", "research status", m.ResearchStatusInput, m.ResearchStatusOutput)
def research_status(app: App, p: m.ResearchStatusInput) -> dict[str, Any]:
    """A session's overview, one of its sections paged, or the list of sessions."""
    from bookmark_research.research import overview, store
    from bookmark_research.research.freshness import source_freshness

    if p.research_id is None:
        if p.section is not None:
            raise InvalidInputError("section requires research_id")
        return overview.list_sessions(app, p.offset, p.limit)
    session = store.open_session(app, p.research_id)
    if p.section is not None:
        return overview.section_page(session, p.section, p.offset, p.limit)
    return {**overview.overview(session),
            "source_freshness": source_freshness(app, session.state, session.inventory())}


@operation("research_inventory", "research inventory", m.ResearchInventoryInput, m.ResearchInventoryOutput)
def research_inventory(app: App, p: m.ResearchInventoryInput) -> dict[str, Any]:
    """Page through a session's frozen inventory (full entries with every bookmark instance)."""
    from bookmark_research.research import overview, store

    return overview.inventory_page(store.open_session(app, p.research_id), p.inventory_ids, p.offset, p.limit)


@operation("research_source", "research source", m.ResearchSourceInput, m.ResearchSourceOutput)
def research_source(app: App, p: m.ResearchSourceInput) -> dict[str, Any]:
    """Read a page of a source's saved text, after checking its SHA-256 (pages concatenate exactly)."""
    from bookmark_research.research import overview, store

    return overview.source_page(store.open_session(app, p.research_id), p.source_id, p.offset, p.limit)


@operation("research_import_evidence", "research import", m.ResearchImportInput, m.ResearchEvidenceOutput,
           read_only=False, destructive=False, idempotent=True, failure=_evidence_failed)
def research_import_evidence(app: App, p: m.ResearchImportInput) -> dict[str, Any]:
    """Import a text the host read itself as a source (no budget; idempotent by operation_id)."""
    from bookmark_research.research.evidence import import_evidence
    from bookmark_research.research.operations import interruptible

    with interruptible():  # Ctrl-C after the reservation: say what became of the operation
        return import_evidence(app, p)


@operation("research_record", "research record", m.ResearchRecordInput, m.ResearchRecordOutput, read_only=False,
           destructive=False)
def research_record(app: App, p: m.ResearchRecordInput) -> dict[str, Any]:
    """Record claims (quotes verified), answers, gaps, questions, conflicts, reviews, retractions, ...."""
    from bookmark_research.research.records import record

    return record(app, p.research_id, p.entry, p.entries, p.batch_id)


@operation("research_coverage", "research coverage", m.ResearchCoverageInput, m.ResearchCoverageOutput)
def research_coverage(app: App, p: m.ResearchCoverageInput) -> dict[str, Any]:
    """Coverage of the frozen input, recomputed from the evidence: rows, metrics and completion blockers."""
    from bookmark_research.research import coverage, store

    return coverage.page(store.open_session(app, p.research_id), p.filter, p.offset, p.limit)


@operation("research_finish", "research finish", m.ResearchFinishInput, m.ResearchOverview, read_only=False,
           destructive=False)
def research_finish(app: App, p: m.ResearchFinishInput) -> dict[str, Any]:
    """Finish a session (completed, incomplete or cancelled): re-verify every citation, write the report."""
    from bookmark_research.research.report import finish

    result = finish(app, p.research_id, p.summary, p.status, p.limitations)
    follow_up = result["wiki_follow_up"]
    if follow_up.get("terms"):  # candidate pages come from the wiki, the stage above research
        from bookmark_research.wiki.followup import wiki_candidates

        follow_up["candidates"] = wiki_candidates(app, follow_up["terms"])
    return result


@operation("research_report", "research report", m.ResearchReportInput, m.ResearchReportOutput)
def research_report(app: App, p: m.ResearchReportInput) -> dict[str, Any]:
    """The report.md of a finished session, with the paths of its sources.json, coverage and state files."""
    from bookmark_research.research.report import report

    return report(app, p.research_id)


@operation("research_search", "research search", m.ResearchSearchInput, m.ResearchEvidenceOutput, read_only=False,
           destructive=False, idempotent=True, open_world=True, failure=_evidence_failed)  # replays by operation_id
def research_search(app: App, p: m.ResearchSearchInput) -> dict[str, Any]:
    """Budgeted web or scholarly search for a session's questions (idempotent by operation_id)."""
    from bookmark_research.research.operations import interruptible
    from bookmark_research.research.retrieval import search

    with interruptible():  # Ctrl-C after the reservation: say what became of the operation
        return search(app, p)


@operation("research_fetch", "research fetch", m.ResearchFetchInput, m.ResearchEvidenceOutput, read_only=False,
           destructive=False, idempotent=True, open_world=True, failure=_evidence_failed)  # replays by operation_id
def research_fetch(app: App, p: m.ResearchFetchInput) -> dict[str, Any]:
    """Budgeted page reads through the session's fetch waterfall; each URL read becomes a source."""
    from bookmark_research.research.operations import interruptible
    from bookmark_research.research.retrieval import fetch

    with interruptible():  # Ctrl-C after the reservation: say what became of the operation
        return fetch(app, p)


@operation("research_route", "research route", m.ResearchRouteInput, m.ResearchRouteOutput)
def research_route(app: App, p: m.ResearchRouteInput) -> dict[str, Any]:
    """Advice on how to run a research task with this host's tools (starts nothing, changes nothing)."""
    from bookmark_research.research.route import route

    return route(p)
