"""The wiki part of the demo, and the deterministic build of the sample wiki committed under ``wiki/``.

Both compile the same research session (the demo's: four sample bookmarks about async Rust and
full-text ranking, five verified claims) into three linked pages. :func:`wiki_steps` runs inside
``bookmark-research demo``; :func:`build_sample` rebuilds ``wiki/`` from the fixtures with fixed times and
ids (the session's pages are imported as the direct fetcher extracts them, instead of fetched from a local
server whose port changes), so the committed files can be compared byte for byte with a fresh build.
"""

from __future__ import annotations

import hashlib
import itertools
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any
from unittest import mock

import click

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "fixtures" / "pages"
PUBLISHED = ("index.json", "index.md", "log.md", "revisions", "pages", "evidence")
SAMPLE_TIME = 1_796_032_800.0  # 2026-11-30T10:00:00Z

#: The demo session's questions and claims (see ``demo_research.py``): question, page, statement, quote.
QUESTIONS = [{"id": "q1", "question": "What is Tokio for, and when is async Rust the wrong tool?"},
             {"id": "q2", "question": "How do BM25 and SQLite FTS5 rank full-text matches?"}]
CLAIMS = [
    ("q1", "https://tokio.rs/tokio/tutorial", "Tokio is an asynchronous runtime for Rust.",
     "Tokio is an asynchronous runtime for the Rust programming language."),
    ("q1", "https://tokio.rs/tokio/tutorial", "Tokio does not make CPU-bound work faster.",
     "It does not speed up CPU-bound work: for parallel number crunching a thread pool such as Rayon is the "
     "better tool"),
    ("q1", "https://rust-lang.github.io/async-book/", "Async functions are lazy futures.",
     'The "async" keyword turns a block or a function into such a future'),
    ("q2", "https://en.wikipedia.org/wiki/Okapi_BM25", "BM25 saturates repeated terms and normalises by document "
     "length.", "k1 controls how quickly repeated occurrences stop adding to the score"),
    ("q2", "https://www.sqlite.org/fts5.html", "In FTS5, smaller bm25() values are better matches.",
     "smaller values mean better matches"),
]


def _ref(rid: str, *claims: str) -> list[dict[str, str]]:
    return [{"research_id": rid, "claim_id": c} for c in claims]


def sample_pages(rid: str) -> list[tuple[str, dict[str, Any], str, int]]:
    """``(page_id, page, change_note, expected_revision)`` in write order; claims c1-c5 of session ``rid``."""
    review = {"method": "model", "reviewer": "bookmark-research demo",
              "note": "Each section restates only what its cited quotes say."}
    async_rust = {
        "title": "Async Rust", "kind": "topic",
        "sections": [
            {"heading": "What async code is",
             "text": "An `async` function does nothing when it is called: it returns a *future*, a value that "
                     "does its work only when it is awaited or handed to a runtime.",
             "claims": _ref(rid, "c3")},
            {"heading": "Runtimes",
             "text": "Futures need an executor. [[tokio]] is the most widely used one; it schedules many tasks "
                     "over a few threads, which suits programs that mostly wait on the network or disk.",
             "claims": _ref(rid, "c1")},
            {"heading": "When not to use it",
             "text": "Async code does not make computation faster. CPU-bound work belongs on a thread pool; "
                     "see [the caveat on the Tokio page](tokio#when-it-does-not-help).",
             "claims": _ref(rid, "c2")},
        ],
        "links": [], "review": review}
    tokio = {
        "title": "Tokio", "kind": "entity",
        "sections": [
            {"heading": "What it is",
             "text": "Tokio is an asynchronous runtime for the Rust language: it runs the futures described in "
                     "[[async-rust|Async Rust]].",
             "claims": _ref(rid, "c1")},
            {"heading": "When it does not help",
             "text": "Tokio does not speed up CPU-bound work. For parallel number crunching, a thread pool "
                     "such as Rayon is the better tool.",
             "claims": _ref(rid, "c2")},
        ],
        "links": [], "review": review}
    ranking = {
        "title": "Full-text ranking", "kind": "topic",
        "sections": [
            {"heading": "BM25",
             "text": "BM25 scores a document by how often the query terms occur in it, but each further "
                     "occurrence of a term adds less (the *k1* parameter sets how quickly), and long documents "
                     "are normalised by their length.",
             "claims": _ref(rid, "c4")},
            {"heading": "SQLite FTS5",
             "text": "FTS5 exposes BM25 as the `bm25()` function. Its values are reversed from the usual "
                     "sense: **smaller** values are better matches, so results are sorted ascending.",
             "claims": _ref(rid, "c5")},
        ],
        "links": [], "review": review}
    async_rust_2 = {**async_rust, "links": [
        {"page_id": "tokio", "relation": "the runtime these pages describe"},
        {"page_id": "full-text-ranking", "relation": "the other topic of the same bookmarks"}]}
    return [
        ("async-rust", async_rust, "Create the topic from the demo session's claims", 0),
        ("tokio", tokio, "Create the entity", 0),
        ("full-text-ranking", ranking, "Create the topic", 0),
        ("async-rust", async_rust_2, "Link the related pages", 1),
    ]


def compile_pages(app: Any, rid: str) -> list[dict[str, Any]]:
    """Write the sample pages for session ``rid`` through ``wiki_write``; returns the write results."""
    from bookmark_research.core.registry import run

    return [run(app, "wiki_write", {"page_id": page_id, "page": page, "change_note": note,
                                    "expected_revision": expected}).model_dump(mode="json")
            for page_id, page, note, expected in sample_pages(rid)]


def wiki_steps(app: Any, rid: str) -> None:
    """The demo's last part: compile the finished session into the wiki, then search and lint it."""
    from bookmark_research.cli.wiki import _lint, _search
    from bookmark_research.core.registry import run

    click.echo("")
    click.secho("── Compile the verified claims into wiki pages (every section cites them)", bold=True)
    click.secho("$ bookmark-research wiki write async-rust --file async-rust.json  (and two more)", dim=True)
    for out in compile_pages(app, rid):
        click.echo(f"  {out['page_id']} revision {out['revision']}: {out['title']} ({out['claims']} claims)")
    click.echo(f"  current views: {Path(out['directory']) / 'pages'}; catalogue: {out['catalog']['index.md']}")
    click.echo("")
    click.secho("── Search the wiki (stemmed English, CJK n-grams; stale pages are excluded)", bold=True)
    click.secho("$ bookmark-research wiki search 'repeated term'", dim=True)
    _search(run(app, "wiki_search", {"query": "repeated term"}).model_dump(mode="json"))
    click.echo("")
    click.secho("── Lint: evidence, links, hashes and every relative link in the rendered Markdown", bold=True)
    click.secho("$ bookmark-research wiki lint", dim=True)
    _lint(run(app, "wiki_lint", {}).model_dump(mode="json"))


def _session(app: Any) -> str:
    """The demo session, built offline from the fixture pages (as the direct fetcher extracts them)."""
    import json

    from bookmark_research.core.registry import run
    from bookmark_research.providers.extract import extract_html

    def call(name: str, **arguments: Any) -> dict[str, Any]:
        return run(app, name, arguments).model_dump(mode="json")

    files = json.loads((PAGES / "urls.json").read_text(encoding="utf-8"))["pages"]
    rid = call("research_start", brief="What do my Rust and search-engine bookmarks say?", questions=QUESTIONS,
               urls=list(files), providers=["direct"])["research_id"]
    sources = {}
    for n, (url, name) in enumerate(files.items(), 1):
        page = extract_html((PAGES / name).read_bytes(), 200, url=url)
        question = "q1" if "rust" in url or "tokio" in url else "q2"
        out = call("research_import_evidence", research_id=rid, operation_id=f"read-{n}", question_id=question,
                   url=url, text=page.text, title=page.title,
                   provenance={"kind": "page", "provider": "direct", "retrieved_at": "2026-11-30T10:00:00Z"})
        sources[url] = out["source"]["id"]
    call("research_record", research_id=rid, batch_id="reviews", entries=[
        {"kind": "source_review", "source_id": sid, "verdict": "accepted", "text": "The page itself, read in full"}
        for sid in sources.values()])
    for question, url, statement, quote in CLAIMS:
        call("research_record", research_id=rid, entry={"kind": "claim", "question_id": question,
                                                        "statement": statement,
                                                        "citations": [{"source_id": sources[url], "quote": quote}]})
    return rid


def build_sample(target: Path, data_dir: Path | None = None) -> None:
    """Rebuild the sample wiki into ``target`` (replaced), reproducibly: fixed clock and ids.

    The session and the whole wiki are built in ``data_dir`` (kept; default: a temporary folder), and
    the published files (not the derived search index and caches) are copied to ``target``.
    """
    if data_dir is None:
        with tempfile.TemporaryDirectory(prefix="bookmark-research-sample-wiki-") as tmp:
            build_sample(target, Path(tmp))
        return
    from bookmark_research.core.app import App

    counter = itertools.count(1)

    def fixed_uuid() -> uuid.UUID:
        return uuid.UUID(hashlib.sha256(f"sample-wiki-{next(counter)}".encode()).hexdigest()[:32])

    with mock.patch("uuid.uuid4", fixed_uuid), mock.patch("time.time", lambda: SAMPLE_TIME), \
            mock.patch.dict("os.environ", {"BOOKMARK_RESEARCH_CONFIG": str(data_dir / "settings.json")}):
        with App(data_dir) as app:
            compile_pages(app, _session(app))
    built = data_dir / "wiki"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in PUBLISHED:
        source = built / name
        if source.is_dir():
            shutil.copytree(source, target / name)
        elif source.is_file():
            shutil.copy2(source, target / name)
