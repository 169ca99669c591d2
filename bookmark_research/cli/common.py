"""What every command shares: the App of this invocation, running an operation, printing failures.

Stage modules (``cli/research.py``, ``cli/wiki.py``, ...) build their commands from these helpers and
are attached to the root group in ``cli/main.py``. Imports are deferred so a query starts fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Collection
from typing import Any

import click


def _configure_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(encoding="utf-8", errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            pass


def _app(ctx: click.Context) -> Any:
    from bookmark_research.core.app import App

    root = ctx.find_root()
    if root.obj is None:
        root.obj = App(root.params.get("data_dir"))
        root.call_on_close(root.obj.close)
    return root.obj


def _fail(message: str, kind: str, as_json: bool, code: int = 1) -> None:
    if as_json:
        click.echo(json.dumps({"error": message, "error_kind": kind}, ensure_ascii=False))
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def invoke(ctx: click.Context, name: str, arguments: dict[str, Any], as_json: bool,
           render: Callable[[dict[str, Any]], None] | None = None, *,
           from_file: bool | Collection[str] = False) -> dict[str, Any]:
    """Run operation ``name`` and print its result; every failure becomes one line and exit 1.

    Arguments the input model refuses are a usage error (exit 2) when they came from the command line,
    and bad data (exit 1) when they were read from a JSON file or stdin: ``from_file=True`` says all of
    them were, a collection names the argument keys that were (the others came from arguments/options).
    """
    from bookmark_research.errors import BookmarkResearchError, InvalidArgumentError, internal_error

    arguments = {k: v for k, v in arguments.items() if v is not None}
    try:
        from bookmark_research.core.registry import run

        result = run(_app(ctx), name, arguments).model_dump(mode="json", exclude_none=False)
    except InvalidArgumentError as exc:  # an option value the operation's input model refuses: usage
        _fail(exc.message, exc.kind, as_json, code=1 if _read_from_file(exc.field, from_file) else 2)
    except BookmarkResearchError as exc:
        _fail(exc.message, exc.kind, as_json)
    except KeyboardInterrupt as exc:  # an operation may say what the interrupt left behind
        click.echo(f"error: {getattr(exc, 'message', None) or 'interrupted; nothing was changed'}", err=True)
        sys.exit(130)
    except Exception as exc:  # never show a traceback to the user
        if os.environ.get("BOOKMARK_RESEARCH_DEBUG"):
            raise
        _fail(f"{internal_error(exc)}; set BOOKMARK_RESEARCH_DEBUG=1 for details", "internal", as_json)
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False, indent=2))
    elif render is not None:
        render(result)
    from bookmark_research.core.registry import get

    failure = get(name).failure
    message = failure(result) if failure is not None else None
    if message:
        click.echo(f"error: {message}", err=True)
        sys.exit(1)
    return result


def _read_from_file(field: tuple[Any, ...], from_file: bool | Collection[str]) -> bool:
    """Whether the refused argument ``field`` was read from a file (see :func:`invoke`)."""
    if isinstance(from_file, bool):
        return from_file
    if not field:  # not one argument's fault: bad data when any of it came from the file
        return bool(from_file)
    return field[0] in from_file


def renderer(name: str) -> Callable[[dict[str, Any]], None]:
    """``cli.render.<name>``, imported only when the output is text: a ``--json`` query skips it."""

    def show(result: dict[str, Any]) -> None:
        from bookmark_research.cli import render

        getattr(render, name)(result)

    return show


json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON (stable keys).")


def read_json_input(path: str, as_json: bool) -> dict[str, Any]:
    """A JSON object from a file, or from stdin when ``path`` is ``-``.

    Strict JSON (duplicate keys and NaN refused); a failure is one line naming the file, exit 1.
    """
    value = read_json_value(path, as_json)
    if not isinstance(value, dict):
        _fail(f"{'stdin' if path == '-' else path}: top level must be a JSON object", "invalid_input", as_json)
    return value


def read_json_value(path: str, as_json: bool) -> Any:
    """Any JSON value (object, list, ...) from a file or stdin (``-``), as strictly as :func:`read_json_input`."""
    from bookmark_research.canvas.strictjson import load_value
    from bookmark_research.errors import BookmarkResearchError

    source = "stdin" if path == "-" else path
    try:
        with (open(path, "rb") if path != "-" else contextlib.nullcontext(sys.stdin.buffer)) as fh:
            data = fh.read()
        return load_value(data, source)
    except OSError as exc:
        _fail(f"{source}: cannot read ({exc.strerror})", "invalid_input", as_json)
    except BookmarkResearchError as exc:
        _fail(exc.message, exc.kind, as_json)
    raise AssertionError("unreachable")
