"""QA report 2 on the evaluation stage: B3, P4, P13, P14 (evaluation parts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli

LABELS = ["--system-id", "host-agent", "--mode", "workflow", "--comparison-group", "demo"]


def test_a_bad_research_id_is_a_usage_error_like_any_bad_option(tmp_path: Path) -> None:
    """P4: a research id that cannot be one exits 2, as a blank --system-id does, and nothing is read."""
    for research_id in ("../x", "r-NOTHEX"):
        proc = run_cli("evaluate", "run-from-session", research_id, *LABELS, data_dir=tmp_path / "d")
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, proc.stderr
        assert len(lines) == 1 and "research_id: String should match pattern '^r-[0-9a-f]{16}$'" in lines[0]
    blank = run_cli("evaluate", "run-from-session", "r-0123456789abcdef", "--system-id", "", "--mode", "m",
                    "--comparison-group", "g", data_dir=tmp_path / "d")
    assert blank.returncode == 2 and "system_id" in blank.stderr
    assert not (tmp_path / "d").exists()


def _session_run() -> dict[str, Any]:
    from bookmark_research.evaluation.from_session import run_from_state
    from tests.test_evaluation_from_session import LABELS as RUN_LABELS
    from tests.test_evaluation_from_session import session_coverage, session_state

    return run_from_state(session_state(), session_coverage(), "", **RUN_LABELS)["run"]


def test_a_runs_file_whose_entries_are_not_runs_is_refused_untouched(tmp_path: Path) -> None:
    """B3: an existing runs file is extended only if every entry is a run record; the refusal names the
    file and the field, and the file keeps its bytes."""
    import pytest

    from bookmark_research.errors import InvalidInputError
    from bookmark_research.evaluation.from_session import save_run

    run = _session_run()
    cases = {
        "obj.json": ('{"runs":[{"x":1}]}', r"obj\.json: runs\[0\]\.run_id: required field is missing$"),
        "list.json": (json.dumps([run, dict(run, run_id="b", repeat="2")]),
                      r"list\.json: runs\[1\]\.repeat: Input should be a valid integer$"),
        "scalar.json": ('{"runs":[7]}', r"scalar\.json: runs\[0\]: Input should be .*dictionary"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_text(text, "utf-8")
        with pytest.raises(InvalidInputError, match=message):
            save_run(str(path), run)
        assert path.read_text("utf-8") == text, name
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"runs": [dict(run, run_id="other")]}), "utf-8")
    assert save_run(str(good), run)["run_count"] == 2


def test_run_from_session_output_refuses_a_canvas_package_and_bad_runs_files(core: Any, tmp_path: Path,
                                                                              demo: Path) -> None:
    """B3 from the terminal: the same package check as ``evaluate --output``; nothing is written."""
    from tests.test_evaluation_from_session import finished_session

    rid = finished_session(core)
    inside = demo / "runs.json"
    proc = run_cli("evaluate", "run-from-session", rid, *LABELS, "--output", str(inside), data_dir=core.data_dir)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert f"runs file {inside}: must be outside canvas package directories (found a package at {demo})" in lines[0]
    assert not inside.exists()
    link = tmp_path / "into-package"
    link.symlink_to(demo)
    proc = run_cli("evaluate", "run-from-session", rid, *LABELS, "--output", str(link / "runs.json"),
                   data_dir=core.data_dir)
    assert proc.returncode == 1 and "must be outside canvas package directories" in proc.stderr
    assert not inside.exists()
    obj = tmp_path / "obj.json"
    obj.write_text('{"runs":[{"x":1}]}', "utf-8")
    proc = run_cli("evaluate", "run-from-session", rid, *LABELS, "--output", str(obj), data_dir=core.data_dir)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [f"error: {obj}: runs[0].run_id: required field is missing"]
    assert obj.read_text("utf-8") == '{"runs":[{"x":1}]}'


def _tools(app: Any) -> dict[str, Any]:
    import anyio
    from mcp import Client

    from bookmark_research.mcp.server import build_server

    async def go() -> list[Any]:
        async with Client(build_server(app)) as client:
            return (await client.list_tools()).tools

    return {t.name: t for t in anyio.run(go)}


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    return schema["$defs"][ref.rsplit("/", 1)[1]] if ref else node


def test_mcp_schema_of_evaluate_research_names_every_field(app: Any) -> None:
    """P13: tools/list gives the suite, run and judgment fields (the evaluation's own closed models)."""
    schema = _tools(app)["evaluate_research"].input_schema
    props = schema["properties"]
    assert set(props) == {"suite", "runs", "judgments"} and schema["required"] == ["suite", "runs"]
    suite = props["suite"]
    assert suite["additionalProperties"] is False
    assert set(suite["required"]) == {"schema_version", "suite_id", "kind", "tasks", "rubric"}
    assert suite["properties"]["kind"]["enum"] == ["synthetic_fixture", "annotated_benchmark"]
    task = _resolve(schema, suite["properties"]["tasks"]["items"])
    assert set(task["required"]) == {"task_id", "prompt", "gold_answers", "scope_source_ids", "question_ids"}
    run = props["runs"]["items"]
    assert props["runs"]["minItems"] == 1 and props["runs"]["maxItems"] == 1000
    assert {"run_id", "task_id", "system_id", "mode", "comparison_group", "repeat", "controls", "answers",
            "claims", "citations", "coverage", "measurements", "report"} == set(run["required"])
    citation = _resolve(schema, run["properties"]["citations"]["items"])
    assert set(citation["required"]) == {"citation_id", "claim_id", "source_id", "quote"}
    assert "suite's tasks" in run["description"]
    judgment = props["judgments"]["items"]
    assert set(judgment["required"]) == {"run_id", "rubric_id", "rubric_version", "evaluator"}
    label = _resolve(schema, judgment["properties"]["citation_labels"]["items"])
    assert label["properties"]["label"]["enum"] == ["supported", "unsupported", "uncertain"]


def test_output_over_mcp_is_terminal_only_and_writes_nothing(app: Any, tmp_path: Path) -> None:
    """P13: ``output`` is refused with the registry's terminal-only line naming the command, not
    "Extra inputs are not permitted"; the tools still say they are read-only."""
    from bookmark_research.mcp.server import build_server
    from tests.conftest import mcp_call, mcp_payload
    from tests.evaluation_data import example

    suite, runs, judgments = example()
    target = tmp_path / "out"
    scored, session = mcp_call(build_server(app), [
        ("evaluate_research", {"suite": suite, "runs": runs, "output": str(target)}),
        ("evaluation_run_from_session", {"research_id": "r-0123456789abcdef", "system_id": "a", "mode": "m",
                                         "comparison_group": "g", "output": str(target / "runs.json")}),
    ])
    assert mcp_payload(scored) == {
        "tool": "evaluate_research", "error_kind": "invalid_input",
        "error": "output can only be chosen from a terminal: use `bookmark-research evaluate --output`"}
    assert mcp_payload(session) == {
        "tool": "evaluation_run_from_session", "error_kind": "invalid_input",
        "error": "output can only be chosen from a terminal: use `bookmark-research evaluate run-from-session --output`"}
    assert scored.is_error and session.is_error and not target.exists()
    tools = _tools(app)
    assert "output" not in tools["evaluation_run_from_session"].input_schema["properties"]
    assert all(tools[n].annotations.read_only_hint for n in ("evaluate_research", "evaluation_run_from_session"))


def test_an_empty_runs_file_names_the_file_not_an_operation(tmp_path: Path) -> None:
    """P14: the refusal of an empty RUNS names the file (the user's word), not an internal operation."""
    from tests.test_evaluation_frontends import SUITE

    for name, text in (("empty.json", "[]"), ("wrapped.json", '{"runs": []}')):
        path = tmp_path / name
        path.write_text(text, "utf-8")
        for extra in ([], ["--output", str(tmp_path / "never")]):
            proc = run_cli("evaluate", SUITE, str(path), *extra, data_dir=tmp_path / "d")
            assert proc.returncode == 1
            assert proc.stderr.strip().splitlines() == [f"error: {path}: holds no runs; give at least one run record"]
    assert not (tmp_path / "never").exists()


def test_the_usage_line_of_evaluate_is_the_documented_form(tmp_path: Path) -> None:
    """P14: ``evaluate SUITE`` (RUNS missing) shows ``evaluate [OPTIONS] SUITE RUNS``, as the README does,
    not the hidden ``score`` subcommand."""
    from tests.test_evaluation_frontends import SUITE

    proc = run_cli("evaluate", SUITE, data_dir=tmp_path)
    assert proc.returncode == 2
    assert "Usage: bookmark-research evaluate [OPTIONS] SUITE RUNS" in proc.stderr
    assert "Try 'bookmark-research evaluate --help' for help." in proc.stderr
    assert "score" not in proc.stderr and "Missing argument 'RUNS'" in proc.stderr


def test_counts_and_possessives_read_as_english(core: Any, tmp_path: Path) -> None:
    """P14: ``1 judgment``, ``1 claim``; ``the citations of run 'x'`` rather than ``run 'x''s citations``."""
    import pytest

    from bookmark_research.errors import InvalidInputError
    from bookmark_research.evaluation.inputs import validate_inputs
    from tests.evaluation_data import example
    from tests.test_evaluation_from_session import finished_session
    from tests.test_evaluation_frontends import SUITE, _write

    suite, runs, judgments = example()
    bad = [dict(j) for j in judgments]
    bad[0]["citation_labels"] = [{"citation_id": "nope", "label": "supported"}]
    with pytest.raises(InvalidInputError, match=r"unknown citation 'nope' \(not among the citations of run '[^']+'\)$"):
        validate_inputs(suite, runs, bad)
    bad = [dict(j) for j in judgments]
    bad[0]["answer_matches"] = [{"answer_id": "nope", "gold_id": None}]
    with pytest.raises(InvalidInputError, match=r"unknown answer 'nope' \(not among the answers of run '[^']+'\)$"):
        validate_inputs(suite, runs, bad)

    one = _write(tmp_path / "one.json", judgments[:1])
    proc = run_cli("evaluate", SUITE, _write(tmp_path / "runs.json", runs), "--judgments", one, data_dir=tmp_path)
    assert proc.returncode == 0 and ", 1 judgment, " in proc.stdout.splitlines()[0], proc.stdout

    rid = finished_session(core)
    proc = run_cli("evaluate", "run-from-session", rid, *LABELS, data_dir=core.data_dir)
    assert proc.returncode == 0
    assert f"research {rid}: 1 answer, 1 claim, 1 citation;" in proc.stderr


def test_readme_says_task_ids_must_be_in_the_suite_and_how_run_from_session_sets_them(core: Any,
                                                                                     tmp_path: Path) -> None:
    """D2: the README states the task_id rule and the research-id default, and both are what happens."""
    from tests.conftest import cli_json
    from tests.test_evaluation_from_session import finished_session
    from tests.test_evaluation_frontends import SUITE

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    section = readme.split("## Evaluating research", 1)[1].split("\n## ", 1)[0]
    flat = " ".join(section.split())
    assert "Every run's `task_id` must be the `task_id` of one of the suite's tasks" in flat
    assert "`task_id` and `run_id` default to the research id" in flat and "pass `--task-id`" in flat
    rid = finished_session(core)
    default = cli_json("evaluate", "run-from-session", rid, *LABELS, "--output", str(tmp_path / "a.json"),
                       data_dir=core.data_dir)
    assert default["run"]["task_id"] == rid and default["run"]["run_id"] == rid
    suite = json.loads(Path(SUITE).read_text("utf-8"))
    suite["tasks"] = [dict(default["task"], task_id="mill")]  # a suite written before, with its own task id
    suite_path = tmp_path / "suite.json"
    suite_path.write_text(json.dumps(suite), "utf-8")
    proc = run_cli("evaluate", str(suite_path), str(tmp_path / "a.json"), data_dir=core.data_dir)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"error: runs[0].task_id: unknown task '{rid}' (not in suite.tasks)"
    chosen = cli_json("evaluate", "run-from-session", rid, *LABELS, "--task-id", "mill", "--output",
                      str(tmp_path / "b.json"), data_dir=core.data_dir)
    assert chosen["run"]["task_id"] == "mill"
    scored = cli_json("evaluate", str(suite_path), str(tmp_path / "b.json"), data_dir=core.data_dir)
    assert scored["runs"][0]["task_id"] == "mill" and scored["runs"][0]["metrics"]["questions_coverage"] == 1.0
