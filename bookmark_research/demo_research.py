"""The research part of ``bookmark-research demo``: a whole session over sample bookmarks, offline.

The local web server that stands in for the web has pages for four of the sample's bookmarks
(``fixtures/pages/urls.json``). The demo indexes a copy of the sample in which those four bookmarks point
at that server, starts a session over them, reads them with the direct fetcher, reviews the sources,
records claims whose quotes are verified against the saved text (one differs from the page by a line
break and curly quotes, to show the normalised match), answers, checks coverage and finishes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from bookmark_research.core.app import App


def _step(title: str, command: str) -> None:
    click.echo("")
    click.secho(f"── {title}", bold=True)
    click.secho(f"$ bookmark-research {command}", dim=True)


def _local_copy(sample: Path, pages: Path, base: str, target: Path) -> dict[str, str]:
    """Copy the sample with the bookmarks that have a local page pointed at the server; original → local URL."""
    mapping = json.loads((pages / "urls.json").read_text(encoding="utf-8"))["pages"]
    local = {url: f"{base}/{name}" for url, name in mapping.items()}
    shutil.copytree(sample, target)
    for path in target.rglob("*.json"):
        text = path.read_text(encoding="utf-8")
        changed = text
        for url, replacement in local.items():
            changed = changed.replace(json.dumps(url), json.dumps(replacement))
        if changed != text:
            path.write_text(changed, encoding="utf-8")
    return local


def research_steps(app: App, data_dir: Path, sample: Path, pages: Path, base: str) -> str:
    from bookmark_research.cli import research_render as show
    from bookmark_research.core.registry import run
    from bookmark_research.research.ids import inventory_id

    def call(name: str, **arguments: Any) -> dict[str, Any]:
        return run(app, name, arguments).model_dump(mode="json")

    local = _local_copy(sample, pages, base, data_dir / "sample-local")
    call("sync_package", package_path=str(data_dir / "sample-local"), source_id="demo-web")
    tokio, book, bm25, fts5 = (local[u] for u in ("https://tokio.rs/tokio/tutorial",
                                                  "https://rust-lang.github.io/async-book/",
                                                  "https://en.wikipedia.org/wiki/Okapi_BM25",
                                                  "https://www.sqlite.org/fts5.html"))
    _step("Start a research session over four sample bookmarks (the inventory is frozen; nothing is sent yet)",
          "research start --source demo-web --scope-mode subset --inventory-id u-… -q q1=… -q q2=… "
          "--provider direct")
    session = call("research_start", brief="What do my Rust and search-engine bookmarks say?",
                   questions=[{"id": "q1", "question": "What is Tokio for, and when is async Rust the wrong tool?"},
                              {"id": "q2", "question": "How do BM25 and SQLite FTS5 rank full-text matches?"}],
                   source_ids=["demo-web"], scope_mode="subset",
                   inventory_ids=[inventory_id(u) for u in (tokio, book, bm25, fts5)], providers=["direct"])
    rid = session["research_id"]
    show.overview(session)

    _step("Read the pages with the direct fetcher (budgeted; every page becomes a source)",
          f"research fetch {rid} --operation-id read-rust --question q1 URL URL   (then read-search for q2)")
    show.fetched({**call("research_fetch", research_id=rid, operation_id="read-rust", question_id="q1",
                         urls=[tokio, book], reuse_archive=False), "next_action": None})  # said once, below
    show.fetched(call("research_fetch", research_id=rid, operation_id="read-search", question_id="q2",
                      urls=[bm25, fts5], reuse_archive=False))
    sources = {s["url"]: s["id"] for s in call("research_status", research_id=rid, section="sources")["items"]}

    _step("Review the sources, then record claims: every quote is verified against the saved text",
          f"research record {rid} --input claims.json")
    call("research_record", research_id=rid, batch_id="reviews", entries=[
        {"kind": "source_review", "source_id": sid, "verdict": "accepted", "text": "The page itself, read in full"}
        for sid in sources.values()])
    claims = [
        ("q1", tokio, "Tokio is an asynchronous runtime for Rust.",
         "Tokio is an asynchronous runtime for the Rust programming language."),
        ("q1", tokio, "Tokio does not make CPU-bound work faster.",
         "It does not speed up CPU-bound work: for parallel number crunching a thread pool such as Rayon is the "
         "better tool"),  # the page breaks this line after "up": a normalised (whitespace) match
        ("q1", book, "Async functions are lazy futures.",
         'The "async" keyword turns a block or a function into such a future'),  # curly quotes on the page
        ("q2", bm25, "BM25 saturates repeated terms and normalises by document length.",
         "k1 controls how quickly repeated occurrences stop adding to the score"),
        ("q2", fts5, "In FTS5, smaller bm25() values are better matches.",
         "smaller values mean better matches"),
    ]
    for question, url, statement, quote in claims:
        show.recorded(call("research_record", research_id=rid, entry={
            "kind": "claim", "question_id": question, "statement": statement,
            "citations": [{"source_id": sources[url], "quote": quote}]}))
    try:
        call("research_record", research_id=rid, entry={"kind": "claim", "question_id": "q1", "statement": "x",
                                                          "citations": [{"source_id": sources[tokio],
                                                                         "quote": "Tokio speeds up CPU-bound work"}]})
    except Exception as exc:  # the refusal is the point of this step
        click.echo(f"  refused as it should be: {getattr(exc, 'message', exc)}")

    _step("Answer the questions and account for every original bookmark", f"research record {rid} --input …")
    call("research_record", research_id=rid, batch_id="answers", entries=[
        {"kind": "answer", "question_id": "q1", "claim_ids": ["c1", "c2", "c3"],
         "answer": "Tokio is Rust's asynchronous runtime for I/O-heavy programs; it does not help CPU-bound work."},
        {"kind": "answer", "question_id": "q2", "claim_ids": ["c4", "c5"],
         "answer": "BM25 weighs rare terms, saturates repeats and normalises length; FTS5's bm25() ranks smaller "
                   "values first."},
        *({"kind": "inventory_review", "inventory_id": inventory_id(url), "disposition": "reviewed",
           "text": "Original page read and quoted", "question_ids": [question], "source_ids": [sources[url]],
           "claim_ids": [cid]} for url, question, cid in ((tokio, "q1", "c1"), (book, "q1", "c3"), (bm25, "q2", "c4"),
                                                          (fts5, "q2", "c5")))])
    _step("Coverage, recomputed from the evidence", f"research coverage {rid}")
    show.coverage(call("research_coverage", research_id=rid))

    _step("Finish: every citation is re-verified, then the report is written", f"research finish {rid} --summary …")
    done = call("research_finish", research_id=rid, summary="Both questions are answered from the four pages.")
    click.echo(f"  status {done['status']}; report: {done['artifacts']['report']}")
    report = Path(done["artifacts"]["report"]).read_text(encoding="utf-8")
    start = report.index("## Research questions")
    click.echo("")
    for line in report[start:].splitlines()[:16]:
        click.echo(f"  │ {line}")
    return rid
