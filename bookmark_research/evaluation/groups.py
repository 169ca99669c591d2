"""Groups, comparability and strata: which runs may be summarised together, and their statistics.

Runs are grouped by (task, comparison group). Inside a group the declared conditions are compared
(``comparability.differences``), and runs are split into strata by system, mode and condition
signature, so runs under different conditions are never averaged together. Statistics drop null
values first: a missing cost is never averaged as 0.
"""

from __future__ import annotations

import copy
import math
import statistics
from typing import Any

from bookmark_research.evaluation.metrics import METRICS

COMPARED_CONTROLS = ("model", "tools", "budget", "input_version", "time_window", "harness_version")

COMPARABILITY_NOTE = (
    "Only the task and the declared conditions (model, tools, budget, input version, time window, harness "
    "version, evaluator and measurement basis) are compared. The runs are not ranked, and no difference "
    "between systems or modes is attributed to a cause."
)


def describe(values: list[float | None]) -> dict[str, Any]:
    """``{n, mean, sample_variance, sample_stddev, min, max}`` over the non-null values.

    Variance (n-1 denominator) and standard deviation are null below two values; everything but
    ``n`` is null when there is no value at all.
    """
    known = [float(v) for v in values if v is not None]
    n = len(known)
    if n == 0:
        return {"n": 0, "mean": None, "sample_variance": None, "sample_stddev": None, "min": None, "max": None}
    variance = statistics.variance(known) if n >= 2 else None
    return {"n": n, "mean": statistics.fmean(known), "sample_variance": variance,
            "sample_stddev": math.sqrt(variance) if variance is not None else None,
            "min": min(known), "max": max(known)}


def _comparable(name: str, row: dict[str, Any]) -> Any:
    if name == "tools":
        return sorted(row["controls"]["tools"])
    if name in COMPARED_CONTROLS:
        return row["controls"][name]
    if name == "evaluator":
        return row["evaluator"]
    return row["measurements"]["basis"]


def differences(rows: list[dict[str, Any]]) -> list[str]:
    """The declared conditions that differ across ``rows``, plus ``budget_not_fully_recorded``."""
    out = []
    for name in (*COMPARED_CONTROLS, "evaluator", "measurement_basis"):
        first = _comparable(name, rows[0])
        if any(_comparable(name, row) != first for row in rows[1:]):
            out.append(name)
    if any(not row["controls"]["budget"] or any(v is None for v in row["controls"]["budget"].values())
           for row in rows):
        out.append("budget_not_fully_recorded")
    return out


def _stratum(rows: list[dict[str, Any]]) -> dict[str, Any]:
    rows = sorted(rows, key=lambda r: (r["repeat"], r["run_id"]))
    first = rows[0]
    controls = copy.deepcopy(first["controls"])
    controls["tools"] = sorted(controls["tools"])
    return {
        "system_id": first["system_id"], "mode": first["mode"], "condition_id": first["condition_id"],
        "run_ids": [r["run_id"] for r in rows], "run_count": len(rows),
        "failed_runs": sum(1 for r in rows if r["status"] == "failed"),
        "incomplete_runs": sum(1 for r in rows if r["status"] == "incomplete"),
        "controls": controls, "evaluator": copy.deepcopy(first["evaluator"]),
        "measurement_basis": first["measurements"]["basis"],
        "metrics": {name: describe([r["metrics"][name] for r in rows]) for name in METRICS},
    }


def build_groups(rows: list[dict[str, Any]], conditions: dict[str, str]) -> list[dict[str, Any]]:
    """Groups of run rows by (task_id, comparison_group), sorted, each with comparability and strata.

    ``conditions`` maps run_id to its full condition signature (strata never mix two signatures).
    """
    by_group: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        by_group.setdefault((row["task_id"], row["comparison_group"]), []).append(row)
    groups = []
    for (task_id, group_name), members in sorted(by_group.items()):
        found = differences(members)
        by_stratum: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for row in members:
            by_stratum.setdefault((row["system_id"], row["mode"], conditions[row["run_id"]]), []).append(row)
        groups.append({
            "task_id": task_id, "comparison_group": group_name,
            "run_ids": sorted(r["run_id"] for r in members), "run_count": len(members),
            "comparability": {"controlled": not found, "differences": found, "note": COMPARABILITY_NOTE},
            "strata": [_stratum(by_stratum[key]) for key in sorted(by_stratum)],
        })
    return groups
