"""Reproducible benchmarks for the indexer; every figure is a ratio to a floor measured in the same run.

    python scripts/bench/run.py [--sizes 1000 10000 100000] [--langs en zh] [--repeat 5] [--million]
                                [--no-sync] [--no-search]

Sync: the floor (json-parse every file + bulk FTS5 insert, see floor.py), cold sync, no-op re-sync
and one-note-changed re-sync (each a ratio to the floor, measured next to it; the cold sync also as a
CPU-time ratio) and the peak RSS of any of them.

Search: the query mix of queries.py. For each query, whole ``bookmark-research search`` processes
alternate with the search floor (search_floor.py: one bare Python process over a prebuilt FTS5
trigram table of the same bookmarks); the ratio is median CLI time over median floor time (also in
CPU time, to 10 ms), with the CLI process's peak RSS. Also the in-process latency (p50/p95 over the
mix through the registry) and ``search_bookmarks`` on a warm MCP server over stdio (p50/p95).

``--million`` adds the 1,000,000-bookmark package (slow: one sync repeat, three per search query;
``--sizes 1000000 --no-search`` for its sync and memory only). The package is byte-compiled first and
subprocesses may write bytecode, as for an installed tool. Results go to stdout (Markdown) and
scripts/bench/out/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
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
from queries import MIX, cli_args  # noqa: E402

TIME = shutil.which("time", path="/usr/bin:/bin") or "/usr/bin/time"  # GNU time: peak RSS of a child
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith("BOOKMARK_RESEARCH_")}

SYNC_SNIPPET = """
import json, sys, time
from bookmark_research.core.app import App
from bookmark_research.sources.manager import sync_package
app = App(sys.argv[2])
start, cpu = time.perf_counter(), time.process_time()
out = sync_package(app, sys.argv[1], source_id="bench", mode="snapshot")
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"seconds": seconds, "cpu": cpu, "bookmarks": out["counts"]["bookmarks"], "changed": out["changed_files"],
                  "updated": out["items_updated"]}))
"""

INPROCESS_SNIPPET = """
import json, sys, time
from bookmark_research.core.app import App
from bookmark_research.core.registry import run
app = App(sys.argv[1])
queries = json.loads(sys.argv[2])
run(app, "search_bookmarks", {"source_id": "bench", "targets": ["warm up"]})
times = []
for _ in range(int(sys.argv[3])):
    for arguments in queries:
        start = time.perf_counter()
        run(app, "search_bookmarks", {"source_id": "bench", **arguments})
        times.append(time.perf_counter() - start)
times.sort()
print(json.dumps({"p50_ms": 1000 * times[len(times) // 2], "p95_ms": 1000 * times[int(len(times) * 0.95)]}))
"""

MCP_SNIPPET = """
import json, sys, time
import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

async def go():
    params = StdioServerParameters(command=sys.executable, args=["-m", "bookmark_research", "serve"],
                                   env={"BOOKMARK_RESEARCH_DATA_DIR": sys.argv[1]})
    queries = json.loads(sys.argv[2])
    times = []
    async with Client(params) as client:
        await client.call_tool("search_bookmarks", {"source_id": "bench", "targets": ["warm up"]})
        for _ in range(int(sys.argv[3])):
            for arguments in queries:
                start = time.perf_counter()
                result = await client.call_tool("search_bookmarks", {"source_id": "bench", **arguments})
                times.append(time.perf_counter() - start)
                assert not result.is_error, result
    times.sort()
    print(json.dumps({"p50_ms": 1000 * times[len(times) // 2], "p95_ms": 1000 * times[int(len(times) * 0.95)]}))

anyio.run(go)
"""


def _python(snippet: str, *args: str) -> dict:
    """Run a snippet in a fresh interpreter; its JSON output plus ``peak_mb`` (GNU time, see :func:`_timed`)."""
    with tempfile.NamedTemporaryFile("r") as report:
        proc = subprocess.run([TIME, "-f", "%M", "-o", report.name, sys.executable, "-c", snippet, *args],
                              capture_output=True, text=True, check=True, env=ENV)
        return {**json.loads(proc.stdout), "peak_mb": int(report.read().split()[-1]) / 1024}


def _timed(command: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of one whole process.

    The process runs under GNU time: a child forked from this (large) benchmark process would
    inherit its peak RSS in ``ru_maxrss``. Floor and CLI both pay the few milliseconds of the wrapper.
    """
    with tempfile.NamedTemporaryFile("r") as report, tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        proc = subprocess.run([TIME, "-f", "%M %U %S", "-o", report.name, *command], stdout=subprocess.DEVNULL,
                              stderr=errors, env=ENV)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            errors.seek(0)
            raise RuntimeError(f"{command} failed: {errors.read().decode(errors='replace')}")
        rss, user, system = report.read().split()[-3:]
        return seconds, float(user) + float(system), int(rss) / 1024


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


def bench_sync(package: Path, size: int, lang: str, repeat: int, work: Path) -> tuple[dict, Path]:
    floors, cold, noop, one, floor_cpu, cold_cpu = [], [], [], [], [], []
    peak = 0.0
    for n in range(repeat):  # the floor runs next to each sync, so both see the same machine load
        cpu = time.process_time()
        floors.append(floor_seconds(package, work / "floor.sqlite3"))
        floor_cpu.append(time.process_time() - cpu)
        data = work / f"data-{lang}-{size}-{n}"
        first = _python(SYNC_SNIPPET, str(package), str(data))
        cold.append(first["seconds"])
        cold_cpu.append(first["cpu"])
        peak = max(peak, first["peak_mb"])
        again = _python(SYNC_SNIPPET, str(package), str(data))
        assert again["changed"] == 0, again
        noop.append(again["seconds"])
        _edit_one_note(package)
        edited = _python(SYNC_SNIPPET, str(package), str(data))
        assert edited["changed"] == 1 and edited["updated"] == 1, edited
        one.append(edited["seconds"])
        peak = max(peak, again["peak_mb"], edited["peak_mb"])
        if n < repeat - 1:
            shutil.rmtree(data)
    floor = _median(floors)
    (work / "floor.sqlite3").unlink(missing_ok=True)
    return {"size": size, "lang": lang, "bookmarks": first["bookmarks"], "floor_s": floor,
            "cold_s": _median(cold), "noop_s": _median(noop), "one_note_s": _median(one),
            "cold_ratio": _median(cold) / floor, "noop_ratio": _median(noop) / floor,
            "one_note_ratio": _median(one) / floor, "peak_mb": peak,
            "cold_cpu_ratio": _median(cold_cpu) / _median(floor_cpu)}, data


def bench_search(package: Path, data: Path, size: int, lang: str, repeat: int, work: Path) -> dict:
    floor_db = work / f"search-floor-{lang}-{size}.sqlite3"
    subprocess.run([sys.executable, str(HERE / "search_floor.py"), "build", str(package), str(floor_db)], check=True)
    queries = []
    for name, arguments in MIX[lang]:
        floor_cmd = [sys.executable, str(HERE / "search_floor.py"), str(floor_db), json.dumps(arguments)]
        cli_cmd = [sys.executable, "-m", "bookmark_research", "--data-dir", str(data), "search", "bench",
                   *cli_args(arguments), "--json"]
        floors, clis, floor_cpu, cli_cpu, peak = [], [], [], [], 0.0
        for _ in range(repeat):  # alternate, so both see the same machine load
            seconds, cpu, _ = _timed(floor_cmd)
            floors.append(seconds)
            floor_cpu.append(cpu)
            seconds, cpu, rss = _timed(cli_cmd)
            clis.append(seconds)
            cli_cpu.append(cpu)
            peak = max(peak, rss)
        queries.append({"query": name, "arguments": arguments, "floor_s": _median(floors), "cli_s": _median(clis),
                        "ratio": _median(clis) / _median(floors), "cli_peak_mb": peak,
                        "cpu_ratio": _median(cli_cpu) / max(_median(floor_cpu), 0.01)})
    mix = json.dumps([arguments for _, arguments in MIX[lang]])
    in_process = _python(INPROCESS_SNIPPET, str(data), mix, str(repeat))
    mcp = _python(MCP_SNIPPET, str(data), mix, str(repeat))
    ratios = [q["ratio"] for q in queries]
    return {"size": size, "lang": lang, "median_ratio": _median(ratios), "worst_ratio": max(ratios),
            "median_cpu_ratio": _median([q["cpu_ratio"] for q in queries]),
            "worst_query": max(queries, key=lambda q: q["ratio"])["query"],
            "floor_median_s": _median([q["floor_s"] for q in queries]),
            "cli_median_s": _median([q["cli_s"] for q in queries]),
            "cli_peak_mb": max(q["cli_peak_mb"] for q in queries),
            "in_process_p50_ms": in_process["p50_ms"], "in_process_p95_ms": in_process["p95_ms"],
            "mcp_p50_ms": mcp["p50_ms"], "mcp_p95_ms": mcp["p95_ms"], "queries": queries}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--langs", nargs="+", default=["en", "zh"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--million", action="store_true", help="also the 1,000,000-bookmark package")
    parser.add_argument("--no-sync", action="store_true", help="skip the sync timings (one cold sync still runs)")
    parser.add_argument("--no-search", action="store_true", help="skip the search timings")
    args = parser.parse_args()
    sizes = args.sizes + ([1_000_000] if args.million else [])
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(HERE.parents[1] / "bookmark_research")],
                   check=True, env=ENV, stdout=subprocess.DEVNULL)
    out_dir = HERE / "out"
    out_dir.mkdir(exist_ok=True)
    sync_rows, search_rows = [], []
    with tempfile.TemporaryDirectory(prefix="bookmark-research-bench-") as tmp:
        work = Path(tmp)
        for size in sizes:
            for lang in args.langs:
                package = generate(work / f"pkg-{lang}-{size}", size, lang)
                if args.no_sync:
                    data = work / f"data-{lang}-{size}"
                    _python(SYNC_SNIPPET, str(package), str(data))
                else:
                    row, data = bench_sync(package, size, lang, 1 if size >= 1_000_000 else args.repeat, work)
                    sync_rows.append(row)
                if not args.no_search:
                    search_rows.append(bench_search(package, data, size, lang, 3 if size >= 1_000_000 else args.repeat,
                                                    work))
                shutil.rmtree(package)
                shutil.rmtree(data)
                print(f"done {lang} {size}", file=sys.stderr)
    (out_dir / "results.json").write_text(json.dumps({"sync": sync_rows, "search": search_rows}, indent=2,
                                                     ensure_ascii=False))
    if sync_rows:
        print("| bookmarks | lang | sync floor | cold sync | cold sync, CPU time | no-op re-sync | one note changed "
              "| peak RSS (any sync) |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|")
        for r in sync_rows:
            print(f"| {r['bookmarks']:,} | {r['lang']} | {r['floor_s']:.2f} s | {r['cold_s']:.2f} s ({r['cold_ratio']:.1f}x) "
                  f"| {r['cold_cpu_ratio']:.1f}x | {r['noop_s']:.2f} s ({r['noop_ratio']:.2f}x) | {r['one_note_s']:.2f} s ({r['one_note_ratio']:.2f}x) "
                  f"| {r['peak_mb']:.0f} MB |")
        print()
    if search_rows:
        print("| bookmarks | lang | search floor (median) | whole CLI (median) | CLI / floor: median, worst | "
              "CPU time: median | in-process p50 / p95 | MCP warm p50 / p95 | CLI peak RSS |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in search_rows:
            print(f"| {r['size']:,} | {r['lang']} | {1000 * r['floor_median_s']:.0f} ms | {1000 * r['cli_median_s']:.0f} ms "
                  f"| {r['median_ratio']:.2f}x, {r['worst_ratio']:.2f}x ({r['worst_query']}) | {r['median_cpu_ratio']:.2f}x "
                  f"| {r['in_process_p50_ms']:.1f} / {r['in_process_p95_ms']:.1f} ms "
                  f"| {r['mcp_p50_ms']:.1f} / {r['mcp_p95_ms']:.1f} ms | {r['cli_peak_mb']:.0f} MB |")
        largest = max(r["size"] for r in search_rows)
        for r in (r for r in search_rows if r["size"] == largest):
            print(f"\nPer query, {largest:,} bookmarks, {r['lang']} (median of {args.repeat}):\n")
            print("| query | floor | whole CLI | ratio | CPU-time ratio | CLI peak RSS |")
            print("|---|---:|---:|---:|---:|---:|")
            for q in r["queries"]:
                print(f"| {q['query']} | {1000 * q['floor_s']:.0f} ms | {1000 * q['cli_s']:.0f} ms | {q['ratio']:.2f}x "
                      f"| {q['cpu_ratio']:.2f}x | {q['cli_peak_mb']:.0f} MB |")


if __name__ == "__main__":
    main()
