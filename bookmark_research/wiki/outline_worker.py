"""Parsing many rendered files on a second core: a helper process for ``wiki_lint``.

When most outlines are missing from the on-disk cache (a wiki folder just cloned, or the cache
deleted), a full lint would parse every rendered file. :class:`Helper` runs this module as a child
process (``python -m bookmark_research.wiki.outline_worker``) that parses a share of those files while
the lint goes on; each outline is keyed by the SHA-256 of the bytes the child read, so it is exactly
what parsing in the linting process would give. Any failure of the child only means the files are
parsed in the linting process instead.

Protocol: the child reads ``{"limit": N, "files": [[absolute path, expected SHA-256], ...]}`` on stdin
and writes one JSON object ``{sha256: [anchors, links]}`` on stdout, for the files that are regular,
at most N bytes and have the expected hash (the others are left to the linting process).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from bookmark_research.wiki.cache import Outline

TIMEOUT_SECONDS = 120.0  # after the linting process has parsed its own share


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Helper:
    """A child process parsing ``wanted`` files (absolute path, expected SHA-256); :meth:`results` waits
    for their outlines, at most :data:`TIMEOUT_SECONDS` (then the linting process parses them itself)."""

    def __init__(self, wanted: list[tuple[str, str]], limit: int) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.expected = {sha for _, sha in wanted}
        package_parent = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (package_parent, os.environ.get("PYTHONPATH", "")) if p)}
        if not sys.executable:
            return
        try:
            # -P: the working directory is not put on sys.path (a json.py there must not run here)
            self.proc = subprocess.Popen([sys.executable, "-P", "-m", __name__], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                         close_fds=True)
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps({"limit": limit, "files": wanted}).encode("utf-8"))
            self.proc.stdin.close()
            self.proc.stdin = None
        except (OSError, ValueError, TypeError):
            self.close()

    def results(self) -> dict[str, Outline]:
        """The child's outlines of the files asked for (empty when it failed or took too long)."""
        if self.proc is None:
            return {}
        try:
            data, _ = self.proc.communicate(timeout=TIMEOUT_SECONDS)
            if self.proc.returncode != 0:
                return {}
            raw = json.loads(data)
            return {sha: ([str(a) for a in anchors], [(str(h), int(n)) for h, n in links])
                    for sha, (anchors, links) in raw.items() if sha in self.expected}
        except (OSError, ValueError, TypeError, AttributeError, subprocess.TimeoutExpired):
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
    job = json.loads(sys.stdin.buffer.read())
    limit = int(job["limit"])
    out: dict[str, Any] = {}
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    for path, expected in job["files"]:
        try:
            fd = os.open(path, flags)
            with os.fdopen(fd, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    continue
                data = fh.read(limit + 1)
            if len(data) > limit or hashlib.sha256(data).hexdigest() != expected:
                continue  # the linting process reports it (artifact_error)
            out[expected] = outline_of(data)
        except (OSError, UnicodeDecodeError):
            continue  # left to the linting process, which reports the file
    sys.stdout.buffer.write(json.dumps(out, ensure_ascii=False).encode("utf-8"))


if __name__ == "__main__":
    main()
