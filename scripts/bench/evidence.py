"""Evidence-layer benchmarks: HTML main-text extraction throughput and archive search latency.

    python scripts/bench/evidence.py [--pages 500] [--large 8] [--archive-pages 10000]

Pages are generated (deterministically) with the structure of real articles: navigation, header,
an article of paragraphs in English or Chinese, asides, footer and scripts. Extraction reports
pages/s and the per-page p50/p95 for the extractor and the previous lxml one (``old_extract.py``),
then the per-page time on ~4 MB pages of hostile shapes (the largest body ``direct`` accepts by
default): paragraph walls, huge tables, link farms and div soup. Extraction quality is measured by
``extraction.py``.
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

import old_extract  # noqa: E402
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


def large_pages(rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    """~4 MB pages of shapes that stress an extractor."""
    def words(k: int) -> str:
        return " ".join(rng.choices(EN_WORDS, k=k))

    shapes = {
        "paragraph wall": lambda: "<article>" + "".join(f"<p>{words(90)}</p>" for _ in range(6_500)) + "</article>",
        "huge table": lambda: "<table>" + "".join(f"<tr><td>{i}</td><td>{words(6)}</td><td>{words(3)}</td></tr>"
                                                  for i in range(60_000)) + "</table>",
        "link farm": lambda: "<ul>" + "".join(f"<li><a href='/p/{i}'>{words(4)}</a></li>" for i in range(80_000))
                             + "</ul>",
        "div soup": lambda: "".join(f"<div class='c{i % 7}'><span>{words(8)}</span></div>" for i in range(60_000)),
        "article in a big page": lambda: ("<nav>" + words(3000) + "</nav><main><article>"
                                          + "".join(f"<p>{words(80)}</p>" for _ in range(40)) + "</article></main>"
                                          + "<footer>" + "".join(f"<a href='/{i}'>{words(5)}</a>" for i in range(50_000))
                                          + "</footer>"),
    }
    out = []
    names = list(shapes)
    for n in range(count):
        name = names[n % len(names)]
        body = ("<html><head><title>" + name + "</title></head><body>" + shapes[name]() + "</body></html>").encode()
        out.append((name, body[:4 * 1024 * 1024]))
    return out


def _timed(extract, pages: list) -> list[float]:
    times = []
    for html in pages:
        t0 = time.perf_counter()
        extract(html)
        times.append(time.perf_counter() - t0)
    return times


def _pct(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--large", type=int, default=10, help="number of ~4 MB pages")
    parser.add_argument("--archive-pages", type=int, default=10_000)
    args = parser.parse_args()
    rng = random.Random(7)
    corpus = [page(rng, n) for n in range(args.pages)]
    megabytes = sum(len(h) for h, _ in corpus) / 1e6
    htmls = [h for h, _ in corpus]
    for label, extract in (("extraction", extract_html), ("old lxml extraction", old_extract.extract_html)):
        times = _timed(extract, htmls)
        seconds = sum(times)
        extracted = sum(extract(h).status == "extracted" for h in htmls[:50])
        print(f"{label}: {args.pages / seconds:.0f} pages/s ({megabytes / seconds:.1f} MB/s of HTML; per page "
              f"p50 {1000 * _pct(times, 0.5):.1f} ms, p95 {1000 * _pct(times, 0.95):.1f} ms; "
              f"{extracted}/50 extracted)")
    if args.large:
        big = large_pages(rng, args.large)
        times = _timed(extract_html, [b for _, b in big])
        worst = max(zip(times, (n for n, _ in big)))
        print(f"~4 MB pages ({len(big)}, {sum(len(b) for _, b in big) / len(big) / 1e6:.1f} MB average): per page "
              f"p50 {_pct(times, 0.5):.2f} s, p95 {_pct(times, 0.95):.2f} s, max {worst[0]:.2f} s ({worst[1]})")

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
