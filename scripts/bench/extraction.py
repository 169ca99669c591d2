"""Main-text extraction quality: shingle F1 / precision / recall of the extractor, next to the old one.

    python scripts/bench/extraction.py [--worst 5] [--via-direct]

Scores ``bookmark_research.providers.extract`` (trafilatura) and the previous hand-written lxml
extractor (``old_extract.py``) on the labelled page sets of :mod:`shingles`: the pages written for
this project (``fixtures/extraction``) and, when ``../shared`` is present, 61 real news and blog pages.
``--via-direct`` also serves every page from a loopback web site and reads it through
``fetch_web`` with ``provider: direct`` (decoding, size caps and archive included), as a user would.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import old_extract  # noqa: E402
from shingles import LabelledPage, SetScore, iter_sets, score_set  # noqa: E402

from bookmark_research.providers.extract import extract_html  # noqa: E402


def _new(page: LabelledPage) -> str:
    return extract_html(page.html, url=page.url).text


def _old(page: LabelledPage) -> str:
    return old_extract.extract_html(page.html).text


def _via_direct(pages: list[LabelledPage]) -> Callable[[LabelledPage], str]:
    """Serve the pages on 127.0.0.1 and read each one through fetch_web(provider="direct")."""
    import os

    from bookmark_research.config.settings import update
    from bookmark_research.core.app import App
    from bookmark_research.core.registry import run

    by_path = {f"/{i}": p.html for i, p in enumerate(pages)}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            body = by_path.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "text/html" if body is not None else "text/plain")
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tmp = tempfile.mkdtemp(prefix="bookmark-research-extraction-")
    os.environ["BOOKMARK_RESEARCH_CONFIG"] = str(Path(tmp) / "settings.json")
    update({"direct.allow_private_networks": True, "direct.min_interval_seconds": 0,
            "direct.respect_robots": False}, terminal=True)
    app = App(Path(tmp) / "data")
    index = {id(p): i for i, p in enumerate(pages)}

    def read(page: LabelledPage) -> str:
        url = f"http://127.0.0.1:{server.server_address[1]}/{index[id(page)]}"
        out = run(app, "fetch_web", {"urls": [url], "provider": "direct", "max_characters": 100_000})
        return out.pages[0].text

    return read


def _line(label: str, score: SetScore, seconds: float) -> str:
    return (f"| {label} | {score.f1:.3f} | {score.precision:.3f} | {score.recall:.3f} | {score.empty} | "
            f"{score.pages / seconds:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worst", type=int, default=0, help="list the N lowest-scoring pages of the new extractor")
    parser.add_argument("--via-direct", action="store_true", help="also read every page through fetch_web direct")
    args = parser.parse_args()
    for name, pages in iter_sets():
        print(f"\n{name}: {len(pages)} pages\n")
        print("| extractor | F1 | precision | recall | empty | pages/s |\n|---|---:|---:|---:|---:|---:|")
        runs: list[tuple[str, Callable[[LabelledPage], str]]] = [("trafilatura (new)", _new), ("lxml (old)", _old)]
        if args.via_direct:
            runs.append(("new, via fetch_web direct", _via_direct(pages)))
        for label, extract in runs:
            start = time.perf_counter()
            score = score_set(pages, extract)
            print(_line(label, score, time.perf_counter() - start))
            if label.startswith("trafilatura") and args.worst:
                worst = sorted(score.per_page, key=lambda row: min(row[1], row[2]))[:args.worst]
                for page, p, r in worst:
                    print(f"|   {page[:48]} | | {p:.2f} | {r:.2f} | | |")


if __name__ == "__main__":
    main()
