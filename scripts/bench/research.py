"""Research-session benchmarks: start over a large source, coverage over it, quote verification.

    python scripts/bench/research.py [--bookmarks 10000] [--claims 1000] [--pages 12] [--page-mb 1]

1. ``research_start`` over an indexed source of N generated bookmarks (the sync is timed separately);
2. ``research_coverage`` (and a status overview) over that whole inventory;
3. C claims of 3 quotes each, verified against saved texts of about 1 MB each (a third of the quotes differ
   from the page by line breaks, no-break spaces or curly quotes, so they take the normalised path):
   the verification alone (warm, and the first touch of each page), then ``research_record`` end to end
   (lock, state load and save) as the state grows, then coverage and an ``incomplete`` finish, which
   re-verify every citation. Process peak memory (max RSS) is reported after each phase.
4. A 4,000-character near miss (one character changed) on a 1 MB page of 12 repeated words, refused by
   ``research_record`` with the closest passage (the first refusal also normalises the page).

Sources with 1 MB texts are created through the import path itself (the operation models cap imported
text at 200,000 characters; pages this size arrive when a fetch is given a large ``max_characters``).
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import EN_WORDS, ZH_WORDS, generate  # noqa: E402

from bookmark_research.core.app import App  # noqa: E402
from bookmark_research.core.registry import run  # noqa: E402
from bookmark_research.errors import BookmarkResearchError  # noqa: E402


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def page_text(rng: random.Random, n: int, size: int) -> str:
    """About ``size`` UTF-8 bytes of wrapped prose (every fourth page Chinese), with curly quotes and dashes."""
    chinese = n % 4 == 3
    words = ZH_WORDS if chinese else EN_WORDS
    parts, length, line = [], 0, 0
    while length < size:
        word = rng.choice(words)
        if rng.random() < 0.02:
            word = f"“{word}”" if not chinese else f"「{word}」"
        sep = "" if chinese else " "
        if rng.random() < 0.01:
            sep = "，" if chinese else " — "
        parts.append(word + sep)
        piece = len((word + sep).encode("utf-8"))
        length += piece
        line += piece
        if line > 80:
            parts.append("\n")
            line = 0
    return "".join(parts)


def quote_from(rng: random.Random, text: str, variant: bool) -> str:
    start = rng.randrange(0, len(text) - 400)
    start = text.find(" ", start) + 1 if text[start:start + 100].count(" ") else start
    quote = text[start:start + rng.randint(60, 200)].strip()
    if variant:
        quote = " ".join(quote.split()).replace("“", '"').replace("”", '"').replace("—", "-")
    return quote or text[start:start + 60]


def timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bookmarks", type=int, default=10_000)
    parser.add_argument("--claims", type=int, default=1000)
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--page-mb", type=float, default=1.0)
    args = parser.parse_args()
    rng = random.Random(11)

    with tempfile.TemporaryDirectory(prefix="bookmark-research-bench-") as tmp:
        import os

        os.environ["BOOKMARK_RESEARCH_CONFIG"] = str(Path(tmp) / "settings.json")
        package = generate(Path(tmp) / "package", args.bookmarks)
        with App(Path(tmp) / "data") as app:
            _, sync_s = timed(run, app, "sync_package", {"package_path": str(package), "source_id": "bench"})
            print(f"sync of {args.bookmarks:,} bookmarks: {sync_s:.2f} s (setup, not a target)")

            started, start_s = timed(run, app, "research_start", {
                "brief": "Benchmark", "questions": [{"id": "q1", "question": "What do these pages say?"}],
                "source_ids": ["bench"]})
            started = started.model_dump(mode="json")
            rid = started["research_id"]
            scope = started["source_scope"]
            folder = Path(started["directory"])
            inv_mb = (folder / "inventory.json").stat().st_size / 1e6
            print(f"research_start: {start_s:.2f} s (target ≤ 2 s) for {scope['selected_url_count']:,} URLs / "
                  f"{scope['selected_instance_count']:,} instances; inventory.json {inv_mb:.1f} MB, state.json "
                  f"{(folder / 'state.json').stat().st_size / 1e6:.2f} MB; max RSS {rss_mb():.0f} MB")

            app2 = App(Path(tmp) / "data")  # a fresh process view: nothing cached from start
            from bookmark_research.research import quotes, store

            store._INVENTORY_CACHE.clear()
            cov, cov_s = timed(run, app2, "research_coverage", {"research_id": rid, "limit": 100})
            _, cov2_s = timed(run, app2, "research_coverage", {"research_id": rid, "limit": 100})
            _, status_s = timed(run, app2, "research_status", {"research_id": rid})
            print(f"research_coverage over {cov.scope_total:,} rows: {cov_s:.2f} s cold (parses inventory.json), "
                  f"{cov2_s:.2f} s warm (target ≤ 1 s); research_status overview {status_s:.2f} s; "
                  f"max RSS {rss_mb():.0f} MB")

            # 1 MB saved texts, created through the import path.
            from bookmark_research.research.citations import verify
            from bookmark_research.research.evidence import import_evidence

            size = int(args.page_mb * 1_000_000)
            texts = []
            for n in range(args.pages):
                text = page_text(rng, n, size)
                texts.append(text)
                import_evidence(app, SimpleNamespace(
                    research_id=rid, operation_id=f"page-{n}", question_id="q1", url=f"https://bench.example/{n}",
                    text=text, title=f"page {n}", inventory_ids=None,
                    provenance=SimpleNamespace(model_dump=lambda **kw: {"kind": "page"})))
            claims = []
            for _ in range(args.claims):
                cites = []
                for _ in range(3):
                    n = rng.randrange(args.pages)
                    cites.append({"source_id": f"s{n + 1}", "quote": quote_from(rng, texts[n], rng.random() < 1 / 3)})
                claims.append(cites)

            quotes._BODIES.clear()
            session = store.open_session(app, rid)
            first_touch = []
            for n in range(args.pages):
                _, seconds = timed(verify, session, [{"source_id": f"s{n + 1}", "quote": " ".join(
                    texts[n][1000:1100].split()).replace("“", '"')}])
                first_touch.append(seconds)
            warm = []
            normalized = 0
            for cites in claims:
                out, seconds = timed(verify, session, cites)
                warm.append(seconds)
                normalized += sum(c["match"] == "normalized" for c in out)
            print(f"quote verification, {args.claims:,} claims × 3 quotes against {args.pages} pages of "
                  f"{args.page_mb:g} MB ({normalized} normalised matches): per claim median "
                  f"{1000 * statistics.median(warm):.2f} ms, p95 {1000 * pct(warm, 0.95):.2f} ms, max "
                  f"{1000 * max(warm):.2f} ms (target ≤ 5 ms); first touch of a page (read, hash, normalise) "
                  f"median {1000 * statistics.median(first_touch):.0f} ms; max RSS {rss_mb():.0f} MB")

            # A long near miss on a repetitive page (a table, a list, a log): refused with the closest passage.
            words = EN_WORDS[:12]
            repetitive = " ".join(rng.choice(words) for _ in range(int(size / 5)))[:size]
            import_evidence(app, SimpleNamespace(
                research_id=rid, operation_id="repetitive", question_id="q1", url="https://bench.example/table",
                text=repetitive, title="repetitive", inventory_ids=None,
                provenance=SimpleNamespace(model_dump=lambda **kw: {"kind": "page"})))
            at = repetitive.index(" ", len(repetitive) * 2 // 3) + 1
            near = repetitive[at:at + 4000]
            near = near[:2000] + "X" + near[2001:]
            repetitive_id = f"s{args.pages + 1}"
            refusals = []
            for _ in range(5):
                t0 = time.perf_counter()
                try:
                    run(app, "research_record", {"research_id": rid, "entry": {
                        "kind": "claim", "question_id": "q1", "statement": "Near miss",
                        "citations": [{"source_id": repetitive_id, "quote": near}]}})
                    raise SystemExit("the near miss was accepted")
                except BookmarkResearchError as exc:  # the expected refusal
                    if "closest passage" not in exc.message:
                        raise
                refusals.append(time.perf_counter() - t0)
            print("refusing a 4,000-character near miss on a 1 MB repetitive page (research_record, closest "
                  f"passage): median {1000 * statistics.median(refusals):.0f} ms; max RSS {rss_mb():.0f} MB")

            record_times = []
            for i, cites in enumerate(claims):
                _, seconds = timed(run, app, "research_record", {"research_id": rid, "entry": {
                    "kind": "claim", "question_id": "q1", "statement": f"Finding {i}", "citations": cites}})
                record_times.append(seconds)
            state_mb = (folder / "state.json").stat().st_size / 1e6
            print(f"research_record (claim, 3 quotes, lock + load + verify + save): first 100 median "
                  f"{1000 * statistics.median(record_times[:100]):.0f} ms, last 100 median "
                  f"{1000 * statistics.median(record_times[-100:]):.0f} ms; state.json {state_mb:.1f} MB after "
                  f"{args.claims:,} claims; max RSS {rss_mb():.0f} MB")

            run(app, "research_record", {"research_id": rid, "entry": {
                "kind": "answer", "question_id": "q1", "answer": "Benchmark answer",
                "claim_ids": [f"c{i + 1}" for i in range(min(100, args.claims))]}})
            _, cov3_s = timed(run, app, "research_coverage", {"research_id": rid, "limit": 100})
            _, finish_s = timed(run, app, "research_finish", {"research_id": rid, "summary": "Benchmark",
                                                              "status": "incomplete"})
            report_mb = (folder / "report.md").stat().st_size / 1e6
            print(f"with {args.claims:,} claims: research_coverage {cov3_s:.2f} s; research_finish (re-verifies "
                  f"{3 * args.claims:,} citations, writes a {report_mb:.1f} MB report) {finish_s:.2f} s; "
                  f"max RSS {rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
