"""A loopback website for the direct fetcher: real pages served by a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PARAGRAPH = ("Reciprocal rank fusion combines ranked lists from several search systems by summing "
             "one over sixty plus the rank of each document. It needs no score calibration and is robust. ")
ARTICLE = f"""<!doctype html><html><head><title>Rank fusion explained</title></head><body>
<nav>Home | Blog | About</nav><header>Site header</header>
<article><h1>Rank fusion explained</h1>{"".join(f"<p>{PARAGRAPH} Part {i}.</p>" for i in range(6))}</article>
<footer>Copyright footer text</footer><script>var tracking = 1;</script></body></html>"""
LOGIN = """<html><head><title>Sign in</title></head><body><form><input name=user>
<input type=password name=pw><button>Log in</button></form><p>Please sign in to continue.</p></body></html>"""
NOT_FOUND = "<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>Sorry.</p></body></html>"
CHALLENGE = """<html><head><title>Just a moment...</title></head><body><p>Checking your browser before
accessing the site. Enable JavaScript and cookies to continue.</p></body></html>"""
ROBOTS = "User-agent: *\nDisallow: /private\n"
META_ARTICLE = f"""<!doctype html><html lang="en-GB"><head><title>Fusion notes | Ranking Weekly</title>
<meta name="author" content="Ada Quarry"><meta property="article:published_time" content="2026-02-03T08:00:00Z">
<meta property="og:site_name" content="Ranking Weekly"></head><body><nav>Home | Archive | Subscribe</nav>
<article><h1>Fusion notes</h1><p>{PARAGRAPH}</p><h2>Why it works</h2><ul><li>No score calibration is needed.</li>
<li>Outliers in one list cannot dominate.</li></ul><table><tr><th>k</th><th>effect</th></tr><tr><td>60</td>
<td>the usual choice</td></tr></table><p>{PARAGRAPH}</p></article><footer>Ranking Weekly footer</footer></body></html>"""
ZH_ARTICLE = ("<html><head><meta charset='gbk'><title>排序融合</title></head><body><article>"
              + "<p>倒数排序融合把多个检索系统的排名列表合并在一起，不需要校准分数，效果稳定。</p>" * 6
              + "</article></body></html>").encode("gbk")
HUGE = ("<html><head><title>Huge</title></head><body><article>"
        + "".join(f"<p>{PARAGRAPH} Block {i}.</p>" for i in range(20_000)) + "</article></body></html>").encode()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, body: str | bytes, content_type: str = "text/html; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        routes = {
            "/robots.txt": (200, ROBOTS, "text/plain"),
            "/article": (200, ARTICLE, "text/html; charset=utf-8"),
            "/login": (200, LOGIN, "text/html"),
            "/missing": (404, NOT_FOUND, "text/html"),
            "/challenge": (503, CHALLENGE, "text/html"),
            "/plain": (200, PARAGRAPH * 5, "text/plain; charset=utf-8"),
            "/private/secret": (200, ARTICLE, "text/html"),
            "/file.pdf": (200, b"%PDF-1.4 binary", "application/pdf"),
            "/meta-article": (200, META_ARTICLE, "text/html; charset=utf-8"),
            "/binary-html": (200, b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, "text/html"),
            "/odd-charset": (200, ARTICLE.replace("explained", "expliqu\u00e9").encode("latin-1"),
                             "text/html; charset=x-unknown-9"),
            "/gbk": (200, ZH_ARTICLE, "text/html"),
            "/huge": (200, HUGE, "text/html"),
            "/big": (200, "<html><body>" + "<p>" + "x" * 1000 + "</p>" * 1 + ("<p>filler</p>" * 20000) + "</body></html>",
                     "text/html"),
        }
        if self.path == "/redirect":
            return self._send(302, "", headers={"Location": "/hop"})
        if self.path == "/hop":
            return self._send(301, "", headers={"Location": "/article"})
        if self.path == "/away":
            return self._send(302, "", headers={"Location": "http://elsewhere.invalid/article"})
        if self.path == "/loop":
            return self._send(302, "", headers={"Location": "/loop"})
        status, body, ctype = routes.get(self.path, (404, NOT_FOUND, "text/html"))
        self._send(status, body, ctype)


class Site:
    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.hits = []  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def hits(self) -> list[str]:
        return self.server.hits  # type: ignore[attr-defined]

    def __enter__(self) -> Site:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
