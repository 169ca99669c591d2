"""The terminal form of research sessions as the README gives it (QA D1, D2, D5)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.conftest import cli_json, run_cli

README = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")


def test_the_readme_start_line_names_the_required_brief(core, demo):
    assert "bookmark-research research start --brief … --source ID --question\nq1=… …" in README
    core.sync(demo, source_id="demo")
    missing = run_cli("research", "start", "--source", "demo", "--question", "q1=What is Tokio for?",
                      data_dir=core.data_dir)
    assert missing.returncode == 2 and "brief: Field required" in missing.stderr
    out = cli_json("research", "start", "--brief", "Tokio", "--source", "demo", "--question", "q1=What is Tokio for?",
                   data_dir=core.data_dir)
    assert out["source_scope"]["mode"] == "whole"


@pytest.mark.parametrize("provider,per_call", [("direct", 1), ("jina", 1), ("exa", 8)])
@pytest.mark.parametrize("urls", [2, 30, 100])
def test_the_fetch_budget_follows_the_readme_formula(core, provider, per_call, urls):
    assert "`min(80, max(12, ⌈URLs / n⌉ + 12))`" in README and "1 for `jina` and `direct`, 8 for the others" in README
    out = core("research_start", brief="b", questions=[{"id": "q1", "question": "q"}], providers=[provider],
               urls=[f"https://example.org/{i}" for i in range(urls)])
    assert out["budget"]["max_fetch_calls"] == min(80, max(12, math.ceil(urls / per_call) + 12))


def test_resume_from_the_terminal_and_hints_name_terminal_commands(core):
    d = core.data_dir
    rid = cli_json("research", "start", "--brief", "b", "-q", "q1=x", "--url", "https://example.org/a",
                   data_dir=d)["research_id"]
    early = run_cli("research", "report", rid, data_dir=d)
    assert early.returncode == 1 and "terminal: research finish ID --summary TEXT" in early.stderr
    cli_json("research", "finish", rid, "--summary", "stopped", "--status", "incomplete", data_dir=d)
    blocked = run_cli("research", "record", rid, data_dir=d, input='{"kind": "gap", "question_id": "q1", "text": "x"}')
    assert blocked.returncode == 1 and "terminal: bookmark-research research resume ID --reason TEXT" in blocked.stderr
    resumed = run_cli("research", "resume", rid, "--reason", "A second source turned up", data_dir=d)
    assert resumed.returncode == 0 and f"Recorded resume {rid}" in resumed.stdout
    assert cli_json("research", "status", rid, data_dir=d)["status"] == "active"
    again = run_cli("research", "resume", rid, "--reason", "twice", data_dir=d)
    assert again.returncode == 1 and "this session is active and already accepts steps" in again.stderr
    cli_json("research", "finish", rid, "--summary", "given up", "--status", "cancelled", data_dir=d)
    closed = run_cli("research", "resume", rid, "--reason", "late", data_dir=d)
    assert closed.returncode == 1 and "this session is cancelled (closed): start a new session" in closed.stderr


def test_config_set_refuses_a_store_folder_inside_a_package_and_reads_negative_values(core, demo, tmp_path):
    """Papercuts 15 and 16."""
    import os

    settings = Path(os.environ["BOOKMARK_RESEARCH_CONFIG"])
    inside = run_cli("config", "set", "output.directory", str(demo / "Permanent" / "x"), data_dir=core.data_dir)
    assert inside.returncode == 1 and "output.directory: " in inside.stderr and "inside a canvas package" in inside.stderr
    assert not settings.exists()  # nothing written
    wiki = run_cli("config", "set", "wiki.directory", str(demo / "w"), data_dir=core.data_dir)
    assert wiki.returncode == 1 and "inside a canvas package" in wiki.stderr
    negative = run_cli("config", "set", "direct.min_interval_seconds", "-1", data_dir=core.data_dir)
    assert negative.returncode != 0 and "No such option" not in negative.stderr
    assert "direct.min_interval_seconds" in negative.stderr and not settings.exists()
    fine = run_cli("config", "set", "output.directory", str(tmp_path / "sessions"), data_dir=core.data_dir)
    assert fine.returncode == 0, fine.stderr
