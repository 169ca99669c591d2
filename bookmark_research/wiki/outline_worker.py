"""Parsing many rendered files on a second core: a helper process for ``wiki_lint``.

When most outlines are missing from the on-disk cache (a wiki folder just cloned, or the cache
deleted), a full lint would parse every rendered file. :class:`Helper` runs this module as a child
process (``python -m bookmark_research.wiki.outline_worker``) that parses a share of those files while
the lint goes on; each outline is keyed by the SHA-256 of the bytes the child read, so it is exactly
what parsing in the linting process would give. Any failure of the child only means the files are
parsed in the linting process instead.

Protocol: the child reads a JSON list of absolute file paths on stdin and writes one JSON object
``{sha256: [anchors, links]}`` on stdout.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bookmark_research.wiki.cache import Outline


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Helper:
    """A child process parsing ``paths`` (absolute); :meth:`results` waits for its outlines."""

    def __init__(self, paths: list[str]) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        package_parent = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (package_parent, os.environ.get("PYTHONPATH", "")) if p)}
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                         close_fds=True)
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(paths).encode("utf-8"))
            self.proc.stdin.close()
        except (OSError, ValueError):
            self.close()

    def results(self) -> dict[str, Outline]:
        """The child's outlines (empty when it failed)."""
        if self.proc is None:
            return {}
        try:
            assert self.proc.stdout is not None
            data = self.proc.stdout.read()
            if self.proc.wait() != 0:
                return {}
            raw = json.loads(data)
            return {sha: ([str(a) for a in anchors], [(str(h), int(n)) for h, n in links])
                    for sha, (anchors, links) in raw.items()}
        except (OSError, ValueError, TypeError, AttributeError):
            return {}
        finally:
            self.close()

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream is not None:
                    stream.close()
            self.proc = None


def outline_of(data: bytes) -> Outline:
    """The outline the lint keeps for a rendered file's bytes (heading anchors, links)."""
    from bookmark_research.wiki.markdown import outline

    headings, links = outline(data.decode("utf-8"))
    return [anchor for _, _, anchor in headings], links


def main() -> None:
    paths = json.loads(sys.stdin.buffer.read())
    out: dict[str, Any] = {}
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for path in paths:
        try:
            fd = os.open(path, flags)
            with os.fdopen(fd, "rb") as fh:
                data = fh.read()
            out[hashlib.sha256(data).hexdigest()] = outline_of(data)
        except (OSError, UnicodeDecodeError):
            continue  # left to the linting process, which reports the file
    sys.stdout.buffer.write(json.dumps(out, ensure_ascii=False).encode("utf-8"))


if __name__ == "__main__":
    main()
