"""``evaluate`` from the terminal (a real subprocess) and ``evaluate_research`` through the MCP SDK client."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from mcp import Client

from bookmark_research.mcp.server import build_server
from tests.conftest import cli_json, mcp_call, mcp_payload, run_cli
from tests.evaluation_data import EXAMPLE, example

SUITE, RUNS, JUDGMENTS = (str(EXAMPLE / f"{n}.json") for n in ("suite", "runs", "judgments"))


def _write(path: Path, value: object) -> str:
    path.write_text(json.dumps(value), "utf-8")
    return str(path)


def test_cli_json_equals_mcp_output(app, tmp_path: Path) -> None:
    suite, runs, judgments = example()
    cli = cli_json("evaluate", SUITE, RUNS, "--judgments", JUDGMENTS, data_dir=tmp_path / "d")
    (result,) = mcp_call(build_server(app), [("evaluate_research", {"suite": suite, "runs": runs,
                                                                    "judgments": judgments})])
    assert not result.is_error, result.content[0].text
    assert result.structured_content == cli
    assert mcp_payload(result) == cli
    assert cli["groups"][0]["strata"][0]["metrics"]["answer_f1"]["n"] == 2
    assert not (tmp_path / "d").exists()  # evaluating touches no data directory


def test_cli_reads_runs_from_stdin_and_wrapped_lists(tmp_path: Path) -> None:
    _, runs, judgments = example()
    plain = cli_json("evaluate", SUITE, RUNS, "--judgments", JUDGMENTS, data_dir=tmp_path)
    wrapped_runs = _write(tmp_path / "wrapped-runs.json", {"runs": runs})
    piped = cli_json("evaluate", SUITE, "-", "--judgments", _write(tmp_path / "j.json", {"judgments": judgments}),
                     data_dir=tmp_path, input=json.dumps(runs))
    assert piped == plain
    assert cli_json("evaluate", SUITE, wrapped_runs, "--judgments", "-", data_dir=tmp_path,
                    input=json.dumps(judgments)) == plain
    without = cli_json("evaluate", SUITE, RUNS, data_dir=tmp_path)
    assert without["judgment_count"] == 0 and without["runs_sha256"] == plain["runs_sha256"]


def test_cli_human_summary_has_a_table_per_group(tmp_path: Path) -> None:
    proc = run_cli("evaluate", SUITE, RUNS, "--judgments", JUDGMENTS, data_dir=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Evaluation of harrow-valley-example (synthetic demonstration): 4 runs" in out
    assert "task harrow-notes · group harrow-v1" in out
    assert "Controlled: every run declares the same conditions." in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith(("notes-agent ", "quick-lookup "))}
    assert "0.833 ± 0.236" in lines["notes-agent"]  # F1 mean ± sd of the two repeats
    assert "45.0 ± 7.1" in lines["notes-agent"]  # latency
    assert "2 (1 failed)" in lines["quick-lookup"]
    assert "quick-lookup-1: citations without a label: 1 of 2" in out
    assert "do not measure any host" in out


def test_output_writes_both_files(tmp_path: Path) -> None:
    target = tmp_path / "reports" / "harrow"
    out = cli_json("evaluate", SUITE, RUNS, "--judgments", JUDGMENTS, "--output", str(target), data_dir=tmp_path)
    assert out["artifacts"] == {"json": str(target / "evaluation.json"), "markdown": str(target / "evaluation.md")}
    saved = json.loads((target / "evaluation.json").read_text("utf-8"))
    assert saved == {k: v for k, v in out.items() if k != "artifacts"}
    md = (target / "evaluation.md").read_text("utf-8")
    assert "## Task harrow-notes · group harrow-v1" in md
    assert "| notes-agent | workflow |" in md and "0.833 ± 0.236 (n=2)" in md
    assert "— (n=0)" in md  # quick-lookup's unknown cost
    assert "Controlled: every run declares the same conditions." in md
    assert "## Runs not scored" in md and "**quick-lookup-2**" in md and "the run failed" in md
    assert "## Limitations" in md and md.count("\n- ") >= 6 + 2


def test_relative_output_and_overwrite(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {"PATH": "/usr/bin:/bin"}
    cmd = [sys.executable, "-m", "bookmark_research", "evaluate", SUITE, RUNS, "--output", "rel-out"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    first = (tmp_path / "rel-out" / "evaluation.json").read_text("utf-8")
    proc = subprocess.run([*cmd, "--judgments", JUDGMENTS], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    second = json.loads((tmp_path / "rel-out" / "evaluation.json").read_text("utf-8"))
    assert json.loads(first)["judgment_count"] == 0 and second["judgment_count"] == 4
    assert sorted(p.name for p in (tmp_path / "rel-out").iterdir()) == ["evaluation.json", "evaluation.md"]


def test_invalid_input_writes_nothing_and_names_the_field(tmp_path: Path) -> None:
    _, runs, judgments = example()
    runs[0]["citations"][1]["claim_id"] = "c9"
    bad_runs = _write(tmp_path / "runs.json", runs)
    target = tmp_path / "out"
    proc = run_cli("evaluate", SUITE, bad_runs, "--judgments", JUDGMENTS, "--output", str(target), data_dir=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "error: runs[0].citations[1].claim_id: unknown claim 'c9' (not among this run's claims)"]
    assert proc.stdout == "" and not target.exists()
    out = cli_json("evaluate", SUITE, bad_runs, "--output", str(target), data_dir=tmp_path, expect=1)
    assert out == {"error": "runs[0].citations[1].claim_id: unknown claim 'c9' (not among this run's claims)",
                   "error_kind": "invalid_input"}
    assert not target.exists()


def test_unreadable_or_malformed_files_are_one_line(tmp_path: Path) -> None:
    nan = tmp_path / "nan.json"
    nan.write_text('[{"cost": NaN}]', "utf-8")
    cases = [
        (["evaluate", SUITE, str(tmp_path / "missing.json")], "missing.json: cannot read"),
        (["evaluate", SUITE, str(nan)], "nan.json: non-finite number NaN"),
        (["evaluate", RUNS, RUNS], "top level must be the suite JSON object"),
        (["evaluate", SUITE, SUITE], "top level must be a JSON list of runs or an object {\"runs\": [...]}"),
        (["evaluate", SUITE, RUNS, "--judgments", SUITE], "list of judgments or an object"),
        (["evaluate", SUITE, _write(tmp_path / "empty.json", [])], "empty.json: holds no runs"),
    ]
    for args, message in cases:
        proc = run_cli(*args, "--output", str(tmp_path / "never"), data_dir=tmp_path)
        assert proc.returncode == 1, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, lines)
    assert not (tmp_path / "never").exists()
    usage = run_cli("evaluate", "-", "-", data_dir=tmp_path, input="{}")
    assert usage.returncode == 2 and "only one of SUITE, RUNS and --judgments" in usage.stderr


def test_output_inside_a_canvas_package_is_refused(tmp_path: Path, demo: Path) -> None:
    target = demo / "evaluation"
    proc = run_cli("evaluate", SUITE, RUNS, "--output", str(target), data_dir=tmp_path)
    assert proc.returncode == 1 and "must be outside canvas package directories" in proc.stderr
    assert not target.exists()


def test_mcp_errors_name_the_field(app) -> None:
    suite, runs, judgments = example()
    judgments[1]["report_scores"][0]["score"] = 5
    too_many = [dict(runs[0], run_id=f"r{i}", repeat=i + 1) for i in range(1001)]
    bad, big, nan = mcp_call(build_server(app), [
        ("evaluate_research", {"suite": suite, "runs": runs, "judgments": judgments}),
        ("evaluate_research", {"suite": suite, "runs": too_many}),
        ("evaluate_research", {"suite": suite, "runs": runs, "judgments": judgments[:1], "extra": 1}),
    ])
    assert bad.is_error and big.is_error and nan.is_error
    assert mcp_payload(bad)["error"].startswith("judgments[1].report_scores[0].score: ")
    assert mcp_payload(bad)["error_kind"] == "invalid_input"
    assert "runs" in mcp_payload(big)["error"] and "1000" in mcp_payload(big)["error"]
    assert "extra" in mcp_payload(nan)["error"]


def test_mcp_lists_evaluate_research_but_not_the_file_writer(app) -> None:
    async def go() -> list:
        async with Client(build_server(app)) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in anyio.run(go)}
    assert "evaluate_research" in tools and not any("write" in name for name in tools if "evaluat" in name)
    schema = tools["evaluate_research"].input_schema
    assert set(schema["properties"]) == {"suite", "runs", "judgments"} and schema["required"] == ["suite", "runs"]
    assert schema["properties"]["runs"]["maxItems"] == 1000
    assert tools["evaluate_research"].annotations.read_only_hint is True
