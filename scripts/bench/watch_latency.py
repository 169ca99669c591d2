"""Live-source benchmark: write-to-searchable latency and the watcher's idle CPU.

    python scripts/bench/watch_latency.py [--bookmarks 10000] [--edits 7] [--debounce 2.0]

Generates a live package (inside a folder marked as a Git work tree), syncs it, starts the
watcher, then repeatedly edits one note and measures until the edit is searchable with
refresh=false (so only the watcher could have applied it). The median includes the debounce by
design; it is reported with the debounce subtracted too. Idle CPU is the watcher process's CPU
time over an idle period, as a percentage of one core.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import generate  # noqa: E402

from bookmark_research.core.app import App  # noqa: E402
from bookmark_research.core.registry import run  # noqa: E402
from bookmark_research.sources.live import Timing  # noqa: E402
from bookmark_research.sources.watcher import SourceWatcher  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bookmarks", type=int, default=10_000)
    parser.add_argument("--edits", type=int, default=7)
    parser.add_argument("--debounce", type=float, default=2.0)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bookmark-research-watch-") as tmp:
        root = Path(tmp)
        (root / "repo" / ".git").mkdir(parents=True)
        package = generate(root / "repo" / "pkg", args.bookmarks)
        with App(root / "data") as app:
            run(app, "sync_package", {"package_path": str(package), "source_id": "w", "mode": "live"})
            card = sorted((package / "Temporary" / "General Chain").glob("*.json"))[0]
            latencies = []
            with SourceWatcher(root / "data", Timing(args.debounce, 5.0)):
                time.sleep(1.0)
                for n in range(args.edits):
                    marker = f"zqmarker{n:03d}x"
                    data = json.loads(card.read_text(encoding="utf-8"))
                    data["items"][0]["children"][0]["note"] = marker
                    start = time.perf_counter()
                    card.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
                    while run(app, "search_bookmarks", {"source_id": "w", "targets": [marker], "refresh": False,
                                                        "count_only": True}).total == 0:
                        time.sleep(0.02)
                    latencies.append(time.perf_counter() - start)
                time.sleep(args.debounce + 1)
                cpu0, wall0 = time.process_time(), time.perf_counter()
                time.sleep(args.idle_seconds)
                idle = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    median = statistics.median(latencies)
    print(f"{args.bookmarks:,} bookmarks, debounce {args.debounce:.1f} s: write → searchable median "
          f"{median:.2f} s (min {min(latencies):.2f}, max {max(latencies):.2f}; {median - args.debounce:.2f} s "
          f"beyond the debounce); idle watcher CPU {100 * idle:.2f}% of one core")


if __name__ == "__main__":
    main()
