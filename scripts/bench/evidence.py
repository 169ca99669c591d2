"""Evidence-layer benchmarks: HTML main-text extraction throughput and archive search latency.

    python scripts/bench/evidence.py [--pages 500] [--archive-pages 10000]

Pages are generated (deterministically) with the structure of real articles: navigation, header,
an article of paragraphs in English or Chinese, asides, footer and scripts.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import EN_WORDS, ZH_WORDS  # noqa: E402

from bookmark_research.core.app import App  # noqa: E402
from bookmark_research.core.registry import run  # noqa: E402
from bookmark_research.evidence.archive import PageCapture, save  # noqa: E402
from bookmark_research.providers.extract import extract_html  # noqa: E402


def page(rng: random.Random, n: int) -> tuple[str, str]:
    words = ZH_WORDS if n % 4 == 0 else EN_WORDS
    join = "" if words is ZH_WORDS else " "
    paragraphs = [join.join(rng.choices(words, k=rng.randint(40, 120))) for _ in range(rng.randint(5, 25))]
    title = join.join(rng.choices(words, k=6))
    html = ("<!doctype html><html><head><title>" + title + "</title><script>window.tracking={id:1}</script>"
            "<style>body{font:16px}</style></head><body><nav>" + " | ".join(rng.choices(EN_WORDS, k=8)) + "</nav>"
            "<header><h1>Site</h1></header><main><article><h1>" + title + "</h1>"
            + "".join(f"<p>{p}</p>" for p in paragraphs) + "</article><aside>Related: "
            + " ".join(rng.choices(EN_WORDS, k=20)) + "</aside></main><footer>© footer</footer></body></html>")
    return html, "\n\n".join(paragraphs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--archive-pages", type=int, default=10_000)
    args = parser.parse_args()
    rng = random.Random(7)
    corpus = [page(rng, n) for n in range(args.pages)]
    megabytes = sum(len(h) for h, _ in corpus) / 1e6
    start = time.perf_counter()
    results = [extract_html(h) for h, _ in corpus]
    seconds = time.perf_counter() - start
    extracted = sum(r.status == "extracted" for r in results)
    print(f"extraction: {args.pages / seconds:.0f} pages/s ({megabytes / seconds:.1f} MB/s of HTML; "
          f"{extracted}/{args.pages} extracted)")

    with tempfile.TemporaryDirectory(prefix="bookmark-research-evidence-") as tmp, App(tmp) as app:
        start = time.perf_counter()
        batch = 100
        for first in range(0, args.archive_pages, batch):
            pages = []
            for n in range(first, min(first + batch, args.archive_pages)):
                _, text = page(rng, n)
                pages.append(PageCapture(f"https://site{n % 97}.example/p/{n}", title=f"page {n}", text=text))
            save(app, provider="direct", tool="bench", request={}, response={}, pages=pages,
                 retrieved_at="2026-11-30T00:00:00Z")
        archived = time.perf_counter() - start
        queries = ["runtime latency", "bm25", "sqlite database index", "推理", "知识 图谱", "gpu", "nonexistentword"]
        times = []
        for _ in range(5):
            for q in queries:
                t0 = time.perf_counter()
                run(app, "search_archive", {"query": q, "limit": 10})
                times.append(time.perf_counter() - t0)
        times.sort()
    print(f"archive: {args.archive_pages:,} pages saved and indexed in {archived:.1f} s "
          f"({args.archive_pages / archived:.0f} pages/s); search p50 {1000 * statistics.median(times):.1f} ms, "
          f"p95 {1000 * times[int(len(times) * 0.95)]:.1f} ms")


if __name__ == "__main__":
    main()
