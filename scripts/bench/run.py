"""Reproducible benchmarks for the indexer; reports ratios to a floor measured in the same run.

    python scripts/bench/run.py [--sizes 1000 10000 100000] [--langs en zh] [--repeat 3]

For each generated package: the floor (json-parse every file + bulk FTS5 insert, see floor.py),
cold sync, no-op re-sync and one-note-changed re-sync (each also as a ratio to the floor), search
latency in-process (p50/p95 over mixed English/CJK/multi-term queries), whole CLI invocations of
``bookmark-research search`` and the peak memory of a cold sync. Results go to stdout (Markdown)
and scripts/bench/out/results.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from floor import floor_seconds  # noqa: E402
from generate import generate  # noqa: E402

QUERIES = ["rust", "async runtime", "bm25 index", "tokio", "gpu inference", "ex", "github.com/search",
           "推理", "推理 加速", "知识图谱", "模型", "检索增强生成", "图", "rust 推理"]

SYNC_SNIPPET = """
import json, resource, sys, time
from bookmark_research.core.app import App
from bookmark_research.sources.manager import sync_package
app = App(sys.argv[2])
start = time.perf_counter()
out = sync_package(app, sys.argv[1], source_id="bench", mode="snapshot")
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "bookmarks": out["counts"]["bookmarks"], "changed": out["changed_files"],
                  "updated": out["items_updated"]}))
"""

SEARCH_SNIPPET = """
import json, sys, time
from bookmark_research.core.app import App
from bookmark_research.core.registry import run
app = App(sys.argv[1])
queries = json.loads(sys.argv[2])
run(app, "search_bookmarks", {"source_id": "bench", "targets": ["warm up"]})
times = []
for _ in range(int(sys.argv[3])):
    for q in queries:
        start = time.perf_counter()
        run(app, "search_bookmarks", {"source_id": "bench", "targets": [q]})
        times.append(time.perf_counter() - start)
times.sort()
print(json.dumps({"p50_ms": 1000 * times[len(times) // 2], "p95_ms": 1000 * times[int(len(times) * 0.95)]}))
"""


def _python(snippet: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", snippet, *args], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _edit_one_note(package: Path) -> Path:
    primary = next((package / d for d in ("Permanent", "永久栏目") if (package / d).exists()))
    file = next(primary.glob("A*.json"))
    data = json.loads(file.read_text(encoding="utf-8"))
    entry = data["identityMap"][len(data["identityMap"]) // 2]
    entry["note"] = f"edited at {time.time()}"
    file.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return file


def bench(size: int, lang: str, repeat: int, work: Path) -> dict:
    package = generate(work / f"pkg-{lang}-{size}", size, lang)
    floor = _median([floor_seconds(package, work / "floor.sqlite3") for _ in range(repeat)])
    cold, noop, one = [], [], []
    peak = 0.0
    for n in range(repeat):
        data = work / f"data-{lang}-{size}-{n}"
        first = _python(SYNC_SNIPPET, str(package), str(data))
        cold.append(first["seconds"])
        peak = max(peak, first["peak_mb"])
        again = _python(SYNC_SNIPPET, str(package), str(data))
        assert again["changed"] == 0, again
        noop.append(again["seconds"])
        _edit_one_note(package)
        edited = _python(SYNC_SNIPPET, str(package), str(data))
        assert edited["changed"] == 1 and edited["updated"] == 1, edited
        one.append(edited["seconds"])
        if n < repeat - 1:
            shutil.rmtree(data)
    search = _python(SEARCH_SNIPPET, str(data), json.dumps(QUERIES), "5")
    cli = []
    for q in ("rust", "推理 加速", "bm25 index"):
        for _ in range(3):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "bookmark_research", "--data-dir", str(data), "search", "bench", q,
                            "--json"], capture_output=True, check=True)
            cli.append(time.perf_counter() - start)
    return {"size": size, "lang": lang, "bookmarks": first["bookmarks"], "floor_s": floor,
            "cold_s": _median(cold), "noop_s": _median(noop), "one_note_s": _median(one),
            "cold_ratio": _median(cold) / floor, "noop_ratio": _median(noop) / floor,
            "one_note_ratio": _median(one) / floor, "search_p50_ms": search["p50_ms"],
            "search_p95_ms": search["p95_ms"], "cli_search_s": _median(cli), "peak_mb": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--langs", nargs="+", default=["en", "zh"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    out_dir = HERE / "out"
    out_dir.mkdir(exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bookmark-research-bench-") as tmp:
        for size in args.sizes:
            for lang in args.langs:
                row = bench(size, lang, args.repeat, Path(tmp))
                rows.append(row)
                print(f"done {lang} {size}", file=sys.stderr)
    (out_dir / "results.json").write_text(json.dumps(rows, indent=2))
    print("| bookmarks | lang | floor | cold sync | no-op re-sync | one note changed | search p50 / p95 | CLI search | peak RSS |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['bookmarks']:,} | {r['lang']} | {r['floor_s']:.2f} s | {r['cold_s']:.2f} s ({r['cold_ratio']:.1f}x) "
              f"| {r['noop_s']:.2f} s ({r['noop_ratio']:.2f}x) | {r['one_note_s']:.2f} s ({r['one_note_ratio']:.2f}x) "
              f"| {r['search_p50_ms']:.1f} / {r['search_p95_ms']:.1f} ms | {r['cli_search_s']:.2f} s | {r['peak_mb']:.0f} MB |")


if __name__ == "__main__":
    main()
