"""Error types shared by every layer.

Every failure a user can cause is a :class:`BookmarkResearchError` with a one-line message that
names the file or field at fault, and a machine-readable ``kind``. Front ends print the message
(CLI) or return it with ``isError`` (MCP); they never show a traceback.
"""

from __future__ import annotations

import os
import traceback


class BookmarkResearchError(Exception):
    """A failure caused by input or state, reported to the user as one line."""

    kind = "error"

    def __init__(self, message: str) -> None:
        message = " ".join(str(message).split()) or self.kind
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, str]:
        return {"error": self.message, "error_kind": self.kind}


class InvalidInputError(BookmarkResearchError):
    """A package, file or argument that cannot be accepted."""

    kind = "invalid_input"


class InvalidArgumentError(InvalidInputError):
    """An operation's arguments do not fit its input model (a usage error: the CLI exits 2).

    ``field`` is the path of the refused argument (``("page", "kind")``), empty when not one field's."""

    def __init__(self, message: str, field: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.field = field


class UnsafeInputError(InvalidInputError):
    """Input that would escape its package, follow links or exceed limits."""

    kind = "unsafe_input"


class NotFoundError(BookmarkResearchError):
    """An unknown source, section, group, folder, item or version."""

    kind = "not_found"


class ConflictError(BookmarkResearchError):
    """The request conflicts with what is already indexed."""

    kind = "conflict"


class StaleSourceError(BookmarkResearchError):
    """A live source's folder cannot be read now; the last good index is still available."""

    kind = "stale_source"


class StorageError(BookmarkResearchError):
    """The data directory or database cannot be used."""

    kind = "storage"


class BusyError(BookmarkResearchError):
    """Another process holds the lock on this record; retrying shortly is safe."""

    kind = "busy"


def internal_error(exc: BaseException) -> str:
    """The one line shown for a bug: the exception type and where it was raised, never its message.

    An exception's text can quote its input (a fragment of an API key, a file's contents), so only
    the type, the innermost frame and (when that is in a library) the innermost frame of this
    package are named.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return f"internal error ({type(exc).__name__})"
    package = os.path.dirname(os.path.abspath(__file__))

    def place(frame: traceback.FrameSummary) -> str:
        path = os.path.abspath(frame.filename)
        if path.startswith(package + os.sep):
            shown = os.path.relpath(path, os.path.dirname(package))
        else:
            shown = "/".join(path.split(os.sep)[-2:])
        return f"{shown}:{frame.lineno}"

    ours = [f for f in frames if os.path.abspath(f.filename).startswith(package + os.sep)]
    where = place(frames[-1])
    if ours and ours[-1] is not frames[-1]:
        where += f" via {place(ours[-1])}"
    return f"internal error ({type(exc).__name__} in {where})"
