"""Named crash points for the crash tests (``tests/test_crashes.py``).

With ``BOOKMARK_RESEARCH_CRASH_AT=<name>`` in the environment, the process kills itself with
SIGKILL when it reaches that point, exactly like ``kill -9`` at that instant: no ``finally``, no
rollback handler, no flush. Without the variable a crash point costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

VARIABLE = "BOOKMARK_RESEARCH_CRASH_AT"


def crash_point(name: str) -> None:
    if os.environ.get(VARIABLE) == name:
        os.kill(os.getpid(), signal.SIGKILL)
