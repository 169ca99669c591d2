"""Budgets and the three-phase protocol every search, fetch and import follows.

1. **Reserve** (session lock held): replay check, session must be active, budget checked, the operation
   appended as ``pending`` with what it reserved, usage increased, state saved — all before any network I/O.
2. **Request** (no lock): the provider call. Other processes may record evidence or read status meanwhile.
   A fallback stage reserves more budget the same way (lock, still active, still pending) before it starts.
3. **Commit** (lock again, state reloaded): the session must still be active and the operation still
   pending; new sources get their ids now; the receipt ``operations/<24 hex>.json`` is written first, then
   the state. A crash after the receipt is repaired on the next load (see ``store.materialise``); a crash
   before it leaves the operation ``pending`` until an ``interruption`` record acknowledges it.

Replays: the same ``operation_id`` with the same arguments returns the saved receipt (``replayed: true``),
without calling any provider — also from another process and after finish; other arguments are refused.
Reservations are never refunded.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from bookmark_research import atomic
from bookmark_research.canvas.strictjson import load_object
from bookmark_research.clock import iso
from bookmark_research.core.app import App
from bookmark_research.errors import BookmarkResearchError, ConflictError
from bookmark_research.research import store
from bookmark_research.research.ids import digest, operation_file_stem
from bookmark_research.research.store import Session

DEFAULTS = {"max_search_calls": 16, "max_fetch_calls": 12, "max_rounds": 8}
CAPS = {"max_search_calls": 120, "max_fetch_calls": 80, "max_rounds": 40}
COUNTERS = {"max_search_calls": "search_calls", "max_fetch_calls": "fetch_calls", "max_rounds": "rounds"}
PER_URL_FETCHERS = ("jina", "direct")  # one HTTP request per URL: one budget unit per URL
BATCH_URLS = 8
CLOSED = "Research is closed; inspect its report or start a new session"
INCOMPLETE = ("Research has an incomplete report; use research_record kind=resume with a reason to continue (terminal: "
              "bookmark-research research resume ID --reason TEXT)")
NOT_PENDING = "Research operation is no longer pending; its late result was not committed"
PENDING_NEXT = ("Inspect the saved operation; acknowledge interruption with research_record kind=interruption "
                "(terminal: research record ID) before using a new operation_id. No automatic retry or budget "
                "refund.")
BUDGET_UNIT = ("search_calls: one per provider x question x query; fetch_calls: one per provider batch of up to "
               "8 URLs (jina and direct: one per URL); rounds: one per research_search call. Reservations are made "
               "before any network request and never refunded; saved-text reads, records, imports and reports are free.")


class OperationInterrupted(KeyboardInterrupt):
    """Ctrl-C after a reservation, with one line saying what became of the operation."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


#: The operation this context reserved last (set by :func:`reserve`), for :func:`interruptible`.
_CURRENT: ContextVar[Begun | None] = ContextVar("research_operation", default=None)


def _amounts(reserved: dict[str, int]) -> str:
    names = {"search_calls": "search call", "fetch_calls": "fetch call", "rounds": "round"}
    parts = [f"{n} {names.get(k, k)}{'' if n == 1 else 's'}" for k, n in reserved.items() if n]
    return " and ".join(parts) or "no budget"


def interrupted(begun: Begun) -> OperationInterrupted:
    """What an interrupt did to ``begun``'s operation (read back from the session), as one line."""
    op_id = begun.operation["id"]  # type: ignore[index]
    op = begun.operation or {}
    try:
        op = find_operation(store.load_state(begun.directory)[0], op_id) or op
    except (BookmarkResearchError, OSError):
        pass
    if op.get("status") == "pending":
        return OperationInterrupted(
            f"interrupted: operation {op_id} stays pending and used {_amounts(op.get('reserved') or {})} (never "
            f"refunded); to continue, record an interruption: echo '{{\"kind\": \"interruption\", "
            f"\"operation_id\": \"{op_id}\", \"text\": \"…\"}}' | bookmark-research research record "
            f"{begun.research_id}")
    return OperationInterrupted(f"interrupted after operation {op_id} was saved ({op.get('status')}); the same "
                                "operation_id replays its result")


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Turn Ctrl-C after a reservation into :class:`OperationInterrupted` (before one: a plain interrupt,
    nothing was reserved)."""
    token = _CURRENT.set(None)
    try:
        yield
    except OperationInterrupted:
        raise
    except KeyboardInterrupt:
        begun = _CURRENT.get()
        if begun is None or begun.operation is None:
            raise
        raise interrupted(begun) from None
    finally:
        _CURRENT.reset(token)


class BudgetExhaustedError(ConflictError):
    kind = "budget_exhausted"


def budget_exhausted(counter: str, needed: int | None = None, left: int | None = None) -> BudgetExhaustedError:
    detail = f" (this step needs {needed}, {max(0, left)} left)" if needed is not None and left is not None else ""
    return BudgetExhaustedError(f"Research budget exhausted: {counter}{detail}; synthesize available evidence or "
                                "finish incomplete")


def require_active(state: dict[str, Any]) -> None:
    if state["status"] == "incomplete":
        raise ConflictError(INCOMPLETE)
    if state["status"] != "active":
        raise ConflictError(CLOSED)


def urls_per_call(first_fetch_provider: str | None) -> int:
    return 1 if first_fetch_provider in PER_URL_FETCHERS else BATCH_URLS


def fetch_cost(provider: str, urls: int) -> int:
    return urls if provider in PER_URL_FETCHERS else (1 if urls else 0)


def plan_budget(given: dict[str, int] | None, selected_urls: int, first_fetch_provider: str | None
                ) -> tuple[dict[str, int], dict[str, Any]]:
    """The session budget and its ``initial_fetch_plan`` (the fetch default grows with the scope)."""
    given = given or {}
    budget = {k: given.get(k, v) for k, v in DEFAULTS.items()}
    per_call = urls_per_call(first_fetch_provider)
    minimum = math.ceil(selected_urls / per_call) if selected_urls else 0
    explicit = "max_fetch_calls" in given
    if not explicit and selected_urls:
        budget["max_fetch_calls"] = min(CAPS["max_fetch_calls"], max(DEFAULTS["max_fetch_calls"], minimum + 12))
    limit = budget["max_fetch_calls"]
    plan = {"selected_urls": selected_urls, "max_urls_per_call": per_call, "minimum_required": minimum,
            "configured_limit": limit, "hard_limit": CAPS["max_fetch_calls"],
            "budget_source": "explicit" if explicit else "scope_default",
            "additional_calls": max(0, limit - minimum), "call_shortfall": max(0, minimum - limit),
            "urls_beyond_capacity": max(0, selected_urls - limit * per_call), "scope_preserved": True,
            "basis": ("A lower bound assuming full batches of the first fetch provider; grouping, failures and "
                      "supplementary reads may need more calls, imports and saved pages may need fewer. The "
                      "scope is never narrowed to fit the budget.")}
    return budget, plan


def remaining(state: dict[str, Any]) -> dict[str, int]:
    return {COUNTERS[k]: state["budget"][k] - state["usage"][COUNTERS[k]] for k in DEFAULTS}


def _fits(state: dict[str, Any], cost: dict[str, int]) -> str | None:
    """The first counter ``cost`` would overrun, or ``None``."""
    for key, counter in COUNTERS.items():
        if state["usage"][counter] + cost.get(counter, 0) > state["budget"][key]:
            return counter
    return None


def _add(state: dict[str, Any], op: dict[str, Any], cost: dict[str, int]) -> None:
    for counter, amount in cost.items():
        state["usage"][counter] += amount
        op["reserved"][counter] = op["reserved"].get(counter, 0) + amount


def find_operation(state: dict[str, Any], operation_id: str) -> dict[str, Any] | None:
    return next((op for op in state["operations"] if op["id"] == operation_id), None)


def receipt_path(session: Session, operation_id: str) -> Any:
    return session.directory / "operations" / f"{operation_file_stem(operation_id)}.json"


def read_receipt(session: Session, operation_id: str) -> dict[str, Any] | None:
    path = receipt_path(session, operation_id)
    if not path.exists():
        return None
    receipt = load_object(store.read_regular(path, "operation receipt"), str(path))
    receipt.pop("_commit", None)
    receipt["replayed"] = True
    return receipt


def replay(session: Session, operation_id: str, kind: str, digests: list[str]) -> dict[str, Any] | None:
    """The saved answer of an existing operation with these arguments; ``None`` for a new operation."""
    op = find_operation(session.state, operation_id)
    if op is None:
        return None
    if op.get("kind") != kind or op.get("digest") not in digests:
        raise ConflictError("operation_id already exists with different arguments")
    receipt = read_receipt(session, operation_id)
    if receipt is not None:
        return receipt
    return {"research_id": session.id, "operation_id": operation_id, "status": "pending", "replayed": True,
            "operation": op, "next_action": PENDING_NEXT}


def operation_digest(kind: str, parameters: dict[str, Any]) -> str:
    return digest({"kind": kind, "parameters": parameters})


@dataclass
class Begun:
    """A reserved operation (``replay`` is set instead when the id was already used)."""

    directory: Any = None
    research_id: str = ""
    operation: dict[str, Any] | None = None
    replay: dict[str, Any] | None = None


def reserve(app: App, research_id: str, operation_id: str, kind: str, parameters: dict[str, Any],
            cost: Callable[[Session], dict[str, int]], *, validate: Callable[[Session], None] | None = None,
            also_accept: list[dict[str, Any]] | None = None, extra: dict[str, Any] | None = None) -> Begun:
    """Phase 1. ``also_accept``: older parameter shapes a replay may match (e.g. without fallbacks)."""
    with store.locked_session(app, research_id) as session:
        digests = [operation_digest(kind, p) for p in [parameters, *(also_accept or [])]]
        saved = replay(session, operation_id, kind, digests)
        if saved is not None:
            return Begun(session.directory, research_id, replay=saved)
        require_active(session.state)
        if validate is not None:
            validate(session)
        amount = {k: v for k, v in cost(session).items() if v}
        over = _fits(session.state, amount)
        if over is not None:
            raise budget_exhausted(over, amount.get(over, 0), remaining(session.state)[over])
        op = {"id": operation_id, "kind": kind, "digest": digests[0], "parameters": parameters, "status": "pending",
              "reserved": {}, "started_at": iso(), "finished_at": None, "result_file": None, **(extra or {})}
        _add(session.state, op, amount)
        session.state["operations"].append(op)
        session.save()
        begun = Begun(session.directory, research_id, operation=dict(op))
        _CURRENT.set(begun)
        return begun


def extend(app: App, begun: Begun, options: list[tuple[Any, dict[str, int]]], record: str) -> list[Any]:
    """Reserve more for a fallback stage: each option (label, cost) that still fits, in order.

    Nothing is reserved when the session was closed or the operation acknowledged meanwhile. The labels
    reserved are appended to ``operation[record]`` (e.g. ``fallback_attempts``).
    """
    with store.locked_session(app, begun.research_id) as session:
        op = find_operation(session.state, begun.operation["id"])  # type: ignore[index]
        if session.state["status"] != "active" or op is None or op["status"] != "pending":
            return []
        chosen = []
        for label, cost in options:
            amount = {k: v for k, v in cost.items() if v}
            if _fits(session.state, amount) is None:
                _add(session.state, op, amount)
                op.setdefault(record, []).append(label)
                chosen.append(label)
        if chosen:
            session.save()
        return chosen


def commit(app: App, begun: Begun, build: Callable[[Session, list[dict[str, Any]]], tuple[dict[str, Any], str]],
           sources: Callable[[Session, int], list[dict[str, Any]]] | None = None,
           actual_usage: dict[str, int] | None = None) -> dict[str, Any]:
    """Phase 3: number new sources, write the receipt, then the state. Returns the receipt (no ``_commit``).

    ``sources(session, first_number)`` creates the new source records (and may write their manifests);
    ``build(session, new_sources)`` returns the payload and the operation status (ok, partial or error).
    """
    op_id = begun.operation["id"]  # type: ignore[index]
    with store.locked_session(app, begun.research_id) as session:
        require_active(session.state)
        op = find_operation(session.state, op_id)
        if op is None or op["status"] != "pending":
            raise ConflictError(NOT_PENDING)
        new_sources = sources(session, len(session.state["sources"]) + 1) if sources is not None else []
        payload, status = build(session, new_sources)
        final = {**op, "status": status, "finished_at": iso(),
                 "result_file": f"operations/{operation_file_stem(op_id)}.json",
                 "error": payload.get("error"), "actual_usage": actual_usage or {}}
        receipt = {"research_id": session.id, "operation_id": op_id, "replayed": False, **payload,
                   "_commit": {"operation": final, "sources": new_sources}}
        atomic.write_json(receipt_path(session, op_id), receipt)
        session.state["sources"].extend(new_sources)
        session.state["operations"][session.state["operations"].index(op)] = final
        session.save()
    receipt.pop("_commit")
    return receipt


def error_payload(exc: Exception) -> dict[str, Any]:
    """A request failure as a committed result. Only our own one-line messages and OS error texts are
    kept; anything else is reported by its type (an unknown exception's text might carry a secret)."""
    from bookmark_research.errors import BookmarkResearchError

    if isinstance(exc, BookmarkResearchError):
        message = exc.message
    elif isinstance(exc, OSError):
        message = f"{type(exc).__name__}: {exc.strerror or 'I/O error'}"
    else:
        message = f"request failed ({type(exc).__name__})"
    return {"status": "error", "error": message[:2000], "error_type": type(exc).__name__}
