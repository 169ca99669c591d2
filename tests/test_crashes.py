"""Standing crash and concurrency checks: kill -9 inside a sync or a removal, two syncs of one source
at once, a sync while the MCP server answers queries. After each: the index is consistent, the next
sync succeeds and no leftovers stay behind."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bookmark_research.failpoints import VARIABLE
from tests.conftest import cli_json, run_cli
from tests.packages import A_PATH, make_demo, read_json, write_json


def _edit(pkg: Path, note: str) -> None:
    data = read_json(pkg / A_PATH)
    data["identityMap"][0]["note"] = note
    write_json(pkg / A_PATH, data)


def _assert_clean(data: Path) -> None:
    """Integrity of the index; every snapshot folder is a version the history knows; nothing staged."""
    conn = sqlite3.connect(data / "index.sqlite3")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        known = {Path(p) for (p,) in conn.execute("SELECT snapshot_path FROM source_versions")}
        current = conn.execute("SELECT COUNT(*) FROM sources s JOIN source_versions v "
                               "ON v.source_id=s.source_id AND v.version_id=s.version_id").fetchone()[0]
        assert current == conn.execute("SELECT COUNT(*) FROM sources").fetchone()[0]
    finally:
        conn.close()
    snapshots = data / "snapshots"
    on_disk = {p for p in snapshots.glob("*/*")} if snapshots.exists() else set()
    assert on_disk == known, on_disk ^ known
    hidden = [p.name for p in snapshots.glob(".*")] + [p.name for p in snapshots.glob("*/.*")]
    assert hidden == []
    for path in known:
        assert (path / "manifest.json").is_file() and (path / "package").is_dir()


@pytest.mark.parametrize("point", ["sync:read", "sync:indexed", "snapshot:staged", "sync:before-commit",
                                   "sync:committed"])
def test_kill_9_inside_a_sync(tmp_path, point):
    pkg, data = make_demo(tmp_path / "pkg"), tmp_path / "data"
    cli_json("sync", str(pkg), "--source-id", "d", data_dir=data)
    _edit(pkg, "after-the-crash")
    killed = run_cli("sync", str(pkg), "--source-id", "d", data_dir=data, env={VARIABLE: point})
    assert killed.returncode == -9, killed.stderr  # really killed at that point
    applied = point == "sync:committed"
    found = cli_json("search", "d", "after-the-crash", "--count-only", data_dir=data)
    assert found["total"] == (1 if applied else 0)  # all or nothing, never half
    history = cli_json("history", "d", data_dir=data)
    assert history["total"] == (2 if applied else 1)
    again = cli_json("sync", str(pkg), "--source-id", "d", data_dir=data)
    assert again["counts"]["bookmarks"] == 5
    assert cli_json("search", "d", "after-the-crash", "--count-only", data_dir=data)["total"] == 1
    _assert_clean(data)


def test_kill_9_inside_a_removal(tmp_path):
    pkg, data = make_demo(tmp_path / "pkg"), tmp_path / "data"
    cli_json("sync", str(pkg), "--source-id", "x", data_dir=data)
    killed = run_cli("source", "remove", "x", "--confirm", data_dir=data, env={VARIABLE: "remove:committed"})
    assert killed.returncode == -9
    assert cli_json("status", data_dir=data)["sources"] == []  # the removal committed
    other = make_demo(tmp_path / "other")
    cli_json("sync", str(other), "--source-id", "y", data_dir=data)  # its sweep takes the orphaned folder
    _assert_clean(data)


def test_kill_9_at_a_random_moment(tmp_path):
    """Not a named point: SIGKILL after a random delay while a larger package syncs."""
    import random

    pkg, data = make_demo(tmp_path / "pkg"), tmp_path / "data"
    tree = read_json(pkg / A_PATH)
    folder = tree["tree"]["children"][0]
    folder["children"] += [{"id": f"b{i}", "parentId": folder["id"], "title": f"bookmark {i}",
                            "url": f"https://example.test/{i}"} for i in range(20000)]
    write_json(pkg / A_PATH, tree)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOOKMARK_RESEARCH_")}
    env.update(BOOKMARK_RESEARCH_DATA_DIR=str(data), BOOKMARK_RESEARCH_CONFIG=str(tmp_path / "cfg.json"))
    seed = random.randrange(10**6)
    delay = 0.25 + random.Random(seed).random() * 1.0
    proc = subprocess.Popen([sys.executable, "-m", "bookmark_research", "sync", str(pkg), "--source-id", "d"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    proc.kill()
    proc.wait(timeout=30)
    status = cli_json("status", data_dir=data)["sources"] if (data / "index.sqlite3").exists() else []
    assert [s["bookmarks"] for s in status] in ([], [20005]), (seed, delay)
    out = cli_json("sync", str(pkg), "--source-id", "d", data_dir=data)
    assert out["counts"]["bookmarks"] == 20005
    _assert_clean(data)


def test_two_syncs_of_one_source_at_once(tmp_path):
    data = tmp_path / "data"
    first, second = make_demo(tmp_path / "one"), make_demo(tmp_path / "two")
    cli_json("sync", str(first), "--source-id", "d", data_dir=data)
    _edit(first, "variant-one")
    _edit(second, "variant-two")
    results: dict[str, Any] = {}

    def run(name: str, pkg: Path) -> None:
        results[name] = run_cli("sync", str(pkg), "--source-id", "d", "--json", data_dir=data)

    threads = [threading.Thread(target=run, args=(n, p)) for n, p in (("one", first), ("two", second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for proc in results.values():
        assert proc.returncode == 0, proc.stderr  # the second waits for the first, neither fails
    one = cli_json("search", "d", "variant-one", "--count-only", data_dir=data)["total"]
    two = cli_json("search", "d", "variant-two", "--count-only", data_dir=data)["total"]
    assert sorted([one, two]) == [0, 1]  # exactly one of them is current, whole
    assert cli_json("history", "d", data_dir=data)["total"] == 3
    _assert_clean(data)


def test_a_sync_while_the_server_answers_queries(tmp_path):
    pkg, data = make_demo(tmp_path / "pkg"), tmp_path / "data"
    cli_json("sync", str(pkg), "--source-id", "d", data_dir=data)
    _edit(pkg, "while-serving")
    params = StdioServerParameters(command=sys.executable, args=["-m", "bookmark_research", "serve"],
                                   env={"BOOKMARK_RESEARCH_DATA_DIR": str(data),
                                        "BOOKMARK_RESEARCH_CONFIG": str(tmp_path / "cfg.json")})
    answers: list[Any] = []

    async def go() -> Any:
        async with Client(params) as client:
            done = anyio.Event()
            holder: dict[str, Any] = {}

            async def sync() -> None:
                holder["sync"] = await anyio.to_thread.run_sync(
                    lambda: run_cli("sync", str(pkg), "--source-id", "d", "--json", data_dir=data))
                done.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(sync)
                while not done.is_set():
                    answers.append(await client.call_tool("search_bookmarks", {"source_id": "d", "limit": 0}))
                    answers.append(await client.call_tool("search_bookmarks", {
                        "source_id": "d", "targets": ["while-serving"], "count_only": True}))
            final = await client.call_tool("search_bookmarks", {"source_id": "d", "targets": ["while-serving"],
                                                                "count_only": True})
            return holder["sync"], final

    synced, final = anyio.run(go)
    assert synced.returncode == 0, synced.stderr
    assert len(answers) >= 2
    for answer in answers:
        assert not answer.is_error, answer.content[0].text
    totals = [a.structured_content["total"] for a in answers]
    assert all(t == 5 for t in totals[0::2]) and set(totals[1::2]) <= {0, 1}
    assert final.structured_content["total"] == 1
    _assert_clean(data)
