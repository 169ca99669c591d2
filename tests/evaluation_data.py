"""The shipped evaluation example (fixtures/evaluation/) as fresh Python values, and small lookups."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "evaluation"


def example() -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """(suite, runs, judgments), freshly loaded so a test may change them."""
    return tuple(json.loads((EXAMPLE / f"{name}.json").read_text("utf-8"))  # type: ignore[return-value]
                 for name in ("suite", "runs", "judgments"))


def row(result: dict[str, Any], run_id: str) -> dict[str, Any]:
    return next(r for r in result["runs"] if r["run_id"] == run_id)


def stratum(result: dict[str, Any], system_id: str, group: int = 0) -> dict[str, Any]:
    strata = [s for s in result["groups"][group]["strata"] if s["system_id"] == system_id]
    assert len(strata) == 1, strata
    return strata[0]


def judgment(judgments: list[dict[str, Any]], run_id: str) -> dict[str, Any]:
    return next(j for j in judgments if j["run_id"] == run_id)


def run(runs: list[dict[str, Any]], run_id: str) -> dict[str, Any]:
    return next(r for r in runs if r["run_id"] == run_id)
