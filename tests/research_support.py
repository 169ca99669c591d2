"""Helpers shared by the research-session tests."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

PAGE = "Current docs: the service supports search and fetch.\nCalls may return partial excerpts."


def start(core: Any, urls: list[str] | None = None, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"brief": "Find out what the service supports",
                            "questions": [{"id": "q1", "question": "What does it support?"}], **kw}
    if urls is not None:
        args["urls"] = urls
    return core("research_start", **args)


def imported(core: Any, rid: str, op: str, url: str, text: str = PAGE, question: str = "q1",
             **kw: Any) -> dict[str, Any]:
    provenance = kw.pop("provenance", {"kind": "page", "retrieved_at": "2026-11-30T10:00:00Z"})
    return core("research_import_evidence", research_id=rid, operation_id=op, question_id=question, url=url,
                text=text, provenance=provenance, **kw)


def record(core: Any, rid: str, **entry: Any) -> dict[str, Any]:
    return core("research_record", research_id=rid, entry=entry)


def claim(core: Any, rid: str, source: str, quote: str, question: str = "q1", statement: str = "A finding",
          **kw: Any) -> dict[str, Any]:
    return record(core, rid, kind="claim", question_id=question, statement=statement,
                  citations=[{"source_id": source, "quote": quote}], **kw)


def snapshot(directory: str | Path) -> dict[str, str]:
    """SHA-256 of every file in a session folder (to assert byte-identical state after a refusal)."""
    root = Path(directory)
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.endswith(".lock")}


class PageSite:
    """A loopback web site serving given pages; paths under ``/slow/`` wait until ``release`` is set."""

    def __init__(self, pages: dict[str, tuple[int, str, str]] | None = None) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.pages = {"/robots.txt": (200, "User-agent: *\nAllow: /\n", "text/plain"), **(pages or {})}
        self.hits: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.release = threading.Event()
        self.entered = threading.Event()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                site.hits.append(self.path)
                site.headers.append(dict(self.headers))
                if self.path.startswith("/slow/"):
                    site.entered.set()
                    site.release.wait(30)
                status, body, ctype = site.pages.get(self.path, (404, "<html><title>404 Not Found</title>"
                                                               "<body><h1>Not Found</h1></body></html>", "text/html"))
                data = body.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "PageSite":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def allow_loopback() -> None:
    """Let the direct fetcher read the loopback site (it refuses private addresses by default)."""
    from bookmark_research.config.settings import update

    update({"direct.allow_private_networks": True, "direct.min_interval_seconds": 0}, terminal=True)


def cli_env(data_dir: Path) -> dict[str, str]:
    """The environment ``run_cli`` gives a CLI subprocess (for ``subprocess.Popen``)."""
    import os

    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BOOKMARK_RESEARCH_") or k == "BOOKMARK_RESEARCH_CONFIG"}
    env["BOOKMARK_RESEARCH_DATA_DIR"] = str(data_dir)
    return env
