"""Research sessions across processes: kill -9 between reserve and commit, races for the last budget unit,
identical batches recorded at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from tests.conftest import cli_json, run_cli
from tests.research_support import PAGE, PageSite, allow_loopback, cli_env, start


def _popen(data_dir, *args):
    return subprocess.Popen([sys.executable, "-m", "bookmark_research", *args, "--json"], env=cli_env(data_dir),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _state(core, rid):
    return json.loads((core.data_dir / "research" / rid / "state.json").read_text())


def test_kill_9_between_reserve_and_commit_leaves_a_pending_operation(core):
    allow_loopback()
    with PageSite({"/slow/page": (200, PAGE, "text/plain")}) as site:
        url = site.base + "/slow/page"
        rid = start(core, [url], providers=["direct"])["research_id"]
        proc = _popen(core.data_dir, "research", "fetch", rid, url, "--operation-id", "lost", "--question", "q1")
        assert site.entered.wait(30), proc.stderr.read() if proc.poll() is not None else "no request"
        state = _state(core, rid)  # reserved and persisted before the request went out
        assert state["operations"][0]["status"] == "pending" and state["usage"]["fetch_calls"] == 1
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        site.release.set()
    replay = cli_json("research", "fetch", rid, url, "--operation-id", "lost", "--question", "q1",
                      data_dir=core.data_dir, expect=1)  # a pending replay is not a result (QA papercut 2)
    assert replay["replayed"] is True and replay["status"] == "pending" and "acknowledge" in replay["next_action"]
    human = run_cli("research", "fetch", rid, url, "--operation-id", "lost", "--question", "q1",
                    data_dir=core.data_dir)
    assert human.returncode == 1 and "already ran" not in human.stdout and "interrupted before" in human.stdout
    assert human.stderr.strip() == ("error: operation lost is still pending: it was interrupted before its result "
                                    "was saved and keeps its reservation; record an interruption to continue")
    status = cli_json("research", "status", rid, data_dir=core.data_dir)
    assert status["operations"][0]["status"] == "pending" and status["counts"]["sources"] == 0
    assert "An interrupted operation needs acknowledgement" in status["coverage"]["completion_blockers"]
    out = cli_json("research", "record", rid, data_dir=core.data_dir,
                   input=json.dumps({"kind": "interruption", "operation_id": "lost", "text": "killed"}))
    assert out["recorded"]["status"] == "unknown_outcome"
    assert _state(core, rid)["usage"]["fetch_calls"] == 1  # never refunded


def test_ctrl_c_during_a_fetch_says_the_operation_stays_pending(core):
    """QA B2: Ctrl-C after the reservation said "nothing was changed", but a budget unit was spent and the
    pending operation blocks completion; the line now says so and how to continue."""
    allow_loopback()
    with PageSite({"/slow/page": (200, PAGE, "text/plain")}) as site:
        url = site.base + "/slow/page"
        rid = start(core, [url], providers=["direct"])["research_id"]
        proc = _popen(core.data_dir, "research", "fetch", rid, url, "--operation-id", "k2", "--question", "q1")
        assert site.entered.wait(30), proc.stderr.read() if proc.poll() is not None else "no request"
        os.kill(proc.pid, signal.SIGINT)
        code = proc.wait(30)
        err = proc.stderr.read()
        site.release.set()
    assert code == 130 and "Traceback" not in err and "nothing was changed" not in err, err
    assert err.strip() == (f"error: interrupted: operation k2 stays pending and used 1 fetch call (never refunded); "
                           "to continue, record an interruption: echo '{\"kind\": \"interruption\", "
                           f"\"operation_id\": \"k2\", \"text\": \"…\"}}' | bookmark-research research record {rid}")
    state = _state(core, rid)
    assert state["operations"][0]["status"] == "pending" and state["usage"]["fetch_calls"] == 1
    recorded = run_cli("research", "record", rid, data_dir=core.data_dir,
                       input='{"kind": "interruption", "operation_id": "k2", "text": "Ctrl-C"}')
    assert recorded.returncode == 0 and _state(core, rid)["operations"][0]["status"] == "unknown_outcome"


def test_two_processes_racing_for_the_last_budget_unit(core):
    allow_loopback()
    with PageSite({"/a": (200, PAGE, "text/plain"), "/b": (200, PAGE, "text/plain")}) as site:
        rid = start(core, [site.base + "/a", site.base + "/b"], providers=["direct"],
                    budget={"max_fetch_calls": 1})["research_id"]
        procs = [_popen(core.data_dir, "research", "fetch", rid, site.base + path, "--operation-id", op,
                        "--question", "q1", "--no-reuse-archive") for op, path in (("one", "/a"), ("two", "/b"))]
        results = [(p.wait(60), p.stdout.read(), p.stderr.read()) for p in procs]
        pages = [h for h in site.hits if h in ("/a", "/b")]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 1], results
    loser = next(err for code, _, err in results if code == 1)
    assert "Research budget exhausted: fetch_calls" in loser and "Traceback" not in loser
    assert len(pages) == 1  # the provider was called once
    state = _state(core, rid)
    assert state["usage"]["fetch_calls"] == 1 and len(state["operations"]) == 1


def test_identical_batches_from_two_processes(core):
    rid = start(core, ["https://example.org/a"])["research_id"]
    batch = json.dumps({"entries": [{"kind": "question", "id": "q2", "question": "Second?"},
                                    {"kind": "gap", "question_id": "q2", "text": "open"}], "batch_id": "same"})
    procs = [subprocess.Popen([sys.executable, "-m", "bookmark_research", "research", "record", rid, "--json"],
                              env=cli_env(core.data_dir), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(batch, timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    results = [json.loads(o) for o, _ in outs]
    assert sorted(r["replayed"] for r in results) == [False, True]
    assert all(r["results"][0]["id"] == "q2" for r in results)
    assert len(_state(core, rid)["questions"]) == 2
