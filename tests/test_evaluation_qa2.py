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
