"""UTC timestamps as stored and shown everywhere (ISO 8601, second precision, ``Z``)."""

from __future__ import annotations

import time
from datetime import datetime, timezone


def iso(ts: float | None = None) -> str:
    """``ts`` (seconds since the epoch; default now) as ``2026-11-30T10:00:00Z``."""
    moment = datetime.fromtimestamp(time.time() if ts is None else ts, timezone.utc)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
