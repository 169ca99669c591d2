"""Where sessions live on disk, and how their state is loaded, verified, locked and saved.

A session is a folder ``<root>/r-<16 hex>/`` (0700) holding readable files::

    state.json, .state.json.lock        the session record; the lock file guards read-modify-write
    inventory.json, context.json        frozen input (hashed at start, re-verified on every load)
    operations/<24 hex>.json            completion receipts of search / fetch / import operations
    evidence/sources/<capture>/         raw provider responses and manifests
    evidence/pages/<sha256>.txt         saved page texts (content addressed)
    evidence/import-<16 hex>/           host-imported texts
    external-runs/                      saved results of external runs
    report.md, sources.json, coverage-<24 hex>.json, report-<12 hex>.md ...   after finish
    work/                               scratch space for the agent

The root is ``output_directory`` (one session), else settings ``output.directory``, else
``<data dir>/research``. Sessions placed elsewhere are remembered in ``<data dir>/research-locations.json``.
Every write is atomic (temp file, fsync, rename); neither ``state.json`` nor a folder the session writes
through (:data:`FOLDERS`) may be a symbolic link, ``state.json`` must pass ``state_schema`` on every load,
and every artifact a state names must resolve inside the session folder.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bookmark_research import atomic
from bookmark_research.canvas.strictjson import load_object
from bookmark_research.clock import iso
from bookmark_research.core.app import App
from bookmark_research.errors import InvalidInputError, NotFoundError, StorageError
from bookmark_research.locks import file_lock
from bookmark_research.paths import checked_store_dir
from bookmark_research.research import jsonfile
from bookmark_research.research.ids import check_research_id, operation_file_stem, sha256_bytes

SCHEMA_VERSION = 2
BUSY = "Research task is being written by another process; retry shortly"
LOCK_TIMEOUT = 10.0  # seconds a step waits for another process's read-modify-write
REGISTRY = "research-locations.json"
_INVENTORY_CACHE: OrderedDict[str, dict[str, Any]] = OrderedDict()
_CONTEXT_CACHE: OrderedDict[str, dict[str, Any]] = OrderedDict()


# --- locations -------------------------------------------------------------------------------------------


def default_root(app: App) -> Path:
    """Settings ``output.directory``, else ``<data dir>/research`` (checked, not created)."""
    from bookmark_research.config.settings import load

    configured = load().output.directory
    return checked_store_dir(configured or app.data_dir / "research", "research directory")


def session_root(app: App, output_directory: str | None) -> tuple[Path, str]:
    """(root, placement) for a new session."""
    if output_directory is not None:
        return checked_store_dir(output_directory, "output_directory"), "explicit"
    return default_root(app), "central"


def read_regular(path: Path, what: str) -> bytes:
    """The bytes of a regular file, refusing symbolic links (one line naming the file)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise NotFoundError(f"{what} is missing: {path}") from None
    except OSError as exc:
        if os.path.islink(path):
            raise StorageError(f"{what} must not be a symbolic link: {path}") from None
        raise StorageError(f"{path}: cannot read {what} ({exc.strerror})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StorageError(f"{what} is not a regular file: {path}")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


_HASHED: dict[tuple[str, int, int, int, int], str] = {}


def file_sha256(path: Path, what: str) -> str:
    """SHA-256 of a regular file; re-read whenever its size, inode, mtime or ctime differ from when this
    process last hashed it (an edit always changes the ctime, which cannot be set back by ordinary means)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        raise NotFoundError(f"{what} is missing: {path}") from None
    except OSError as exc:
        raise StorageError(f"{path}: cannot read {what} ({exc.strerror})") from None
    key = (str(path), st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    found = _HASHED.get(key)
    if found is None:
        found = sha256_bytes(read_regular(path, what))
        if len(_HASHED) > 10_000:
            _HASHED.clear()
        _HASHED[key] = found
    return found


def _registry_path(app: App) -> Path:
    return app.data_dir / REGISTRY


def _read_registry(app: App) -> dict[str, Any]:
    path = _registry_path(app)
    if not path.exists():
        return {"schema_version": 1, "tasks": {}}
    data = load_object(read_regular(path, "research location registry"), str(path))
    if not isinstance(data.get("tasks"), dict):
        raise StorageError(f"{path}: field tasks must be an object")
    return data


def register(app: App, research_id: str, directory: Path, placement: str) -> None:
    """Remember where a session lives (entries are never removed)."""
    app.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    with file_lock(app.data_dir / f".{REGISTRY}.lock", busy_message="Research location registry is being "
                   "updated by another process; retry shortly"):
        data = _read_registry(app)
        data["tasks"][research_id] = {"path": str(directory), "created_at": iso(), "placement": placement}
        atomic.write_json(_registry_path(app), data)


def registered(app: App) -> dict[str, dict[str, Any]]:
    try:
        return _read_registry(app)["tasks"]
    except (NotFoundError, StorageError, InvalidInputError):
        return {}


def locate(app: App, research_id: str) -> Path:
    """The folder of session ``research_id`` (NotFoundError when unknown or gone)."""
    check_research_id(research_id)
    root = default_root(app)
    own = root / research_id
    if (own / "state.json").exists() or os.path.islink(own / "state.json"):
        return own
    entry = registered(app).get(research_id)
    if entry is None:
        raise NotFoundError(f"Unknown research_id: {research_id}")
    path = Path(entry.get("path", ""))
    if not path.is_absolute() or path.name != research_id or Path(os.path.realpath(path)) != path:
        raise StorageError(f"Research location registry names an unusable folder for {research_id}: {path}")
    if not (path / "state.json").exists() and not os.path.islink(path / "state.json"):
        raise NotFoundError(f"Research task folder is missing: {path}")
    return path


# --- the session -----------------------------------------------------------------------------------------


class Session:
    """A loaded session: its folder and its state (receipts already materialised in memory)."""

    def __init__(self, app: App, directory: Path, state: dict[str, Any], materialised: bool) -> None:
        self.app = app
        self.directory = directory
        self.state = state
        self.materialised = materialised  # state differs from state.json by recovered receipts
        #: quote look-ups done before the lock was taken ((source sha256, quote) → (match, closest passage))
        self.prepared_quotes: dict[tuple[str, str], Any] = {}
        self.state_key: tuple[int, int, int, int] | None = None  # of the state.json read (unlocked reads)

    @property
    def id(self) -> str:
        return self.state["research_id"]

    def path(self, relative: str) -> Path:
        """An artifact named by the state, refused unless it resolves inside the session folder."""
        if not isinstance(relative, str) or not relative or relative.startswith("/") or "\\" in relative:
            raise StorageError(f"Research artifact is outside the session: {relative!r}")
        target = Path(os.path.realpath(self.directory / relative))
        base = Path(os.path.realpath(self.directory))
        if base not in target.parents:
            raise StorageError(f"Research artifact is outside the session: {relative}")
        return target

    def relative(self, path: Path) -> str:
        return path.relative_to(self.directory).as_posix()

    def save(self) -> None:
        """Write state.json atomically (the caller holds the session lock)."""
        self.state["updated_at"] = iso()
        _refuse_symlink(self.directory / "state.json")
        try:
            atomic.write_text(self.directory / "state.json", jsonfile.dumps(self.state))
        except OSError as exc:
            raise StorageError(f"{self.directory / 'state.json'}: cannot write ({exc.strerror})") from None
        self.materialised = False

    # frozen input, parsed once per content hash
    def inventory(self) -> dict[str, Any]:
        path = self.directory / "inventory.json"
        data = read_regular(path, "inventory.json")
        digest = sha256_bytes(data)
        if digest != self.state.get("inventory_manifest_sha256"):
            raise StorageError(f"Frozen input inventory hash changed: {path}")
        manifest = _INVENTORY_CACHE.get(digest)
        if manifest is None:
            manifest = jsonfile.loads(data, str(path))
            _remember(_INVENTORY_CACHE, digest, manifest)
        check_scope(self.state, manifest)
        return manifest

    def context(self) -> dict[str, Any]:
        path = self.directory / "context.json"
        data = read_regular(path, "context.json")
        digest = sha256_bytes(data)
        expected = self.state.get("context_manifest_sha256")
        if expected is not None and digest != expected:
            raise StorageError(f"Frozen research context hash changed: {path}")
        context = _CONTEXT_CACHE.get(digest)
        if context is None:
            context = jsonfile.loads(data, str(path))
            _remember(_CONTEXT_CACHE, digest, context)
        return context


def remember_frozen(inventory_sha: str, manifest: dict[str, Any], context_sha: str, context: dict[str, Any]) -> None:
    """Seed the parse caches with what a start just wrote (so its overview does not parse it again)."""
    _remember(_INVENTORY_CACHE, inventory_sha, manifest)
    _remember(_CONTEXT_CACHE, context_sha, context)


def _remember(cache: OrderedDict[str, dict[str, Any]], key: str, value: dict[str, Any]) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > 4:
        cache.popitem(last=False)


#: The folders a session writes through (its own folder first); none may be a symbolic link.
FOLDERS = ("", "operations", "evidence", "evidence/pages", "evidence/captures", "work", "external-runs")


def check_folders(directory: Path, *more: str) -> None:
    """Refuse a session whose folder, or a folder it writes through, is a symbolic link (or not a folder):
    a write would land outside the session while every later read refuses it."""
    for relative in FOLDERS + more:
        path = directory / relative if relative else directory
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue  # created (0700) when first needed
        except OSError as exc:
            raise StorageError(f"{path}: cannot inspect the research folder ({exc.strerror})") from None
        if stat.S_ISLNK(st.st_mode):
            raise StorageError(f"Research folder must not be a symbolic link: {path}")
        if not stat.S_ISDIR(st.st_mode):
            raise StorageError(f"Research folder is not a folder: {path}")


def _refuse_symlink(path: Path) -> None:
    if os.path.islink(path):
        raise StorageError(f"state.json must not be a symbolic link: {path}")


def check_scope(state: dict[str, Any], manifest: dict[str, Any]) -> None:
    """The state's scope must be a consistent selection of its frozen inventory."""
    scope = state.get("source_scope") or {}
    problem = "Research scope is inconsistent with its frozen complete inventory"
    ids = [e["id"] for e in manifest.get("entries", [])]
    selected = scope.get("selected_inventory_ids", [])
    if scope.get("input_version") != manifest.get("input_version") or len(set(selected)) != len(selected):
        raise StorageError(problem)
    known = set(ids)
    if any(i not in known for i in selected):
        raise StorageError(problem)
    if scope.get("mode") == "whole" and selected != ids:
        raise StorageError(problem)


def state_key(directory: Path) -> tuple[int, int, int, int] | None:
    """Identity of the current state.json (inode, size, mtime, ctime): an atomic replace or an edit changes it."""
    try:
        st = os.stat(directory / "state.json", follow_symlinks=False)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def load_state(directory: Path) -> tuple[dict[str, Any], bool]:
    """Read and check state.json (never a symlink), then materialise committed receipts in memory."""
    path = directory / "state.json"
    _refuse_symlink(path)
    state = jsonfile.loads(read_regular(path, "state.json"), str(path))
    if state.get("schema_version") != SCHEMA_VERSION or state.get("research_id") != directory.name:
        raise StorageError(f"{path}: not a research session state (schema_version {SCHEMA_VERSION} for "
                           f"{directory.name} expected)")
    from bookmark_research.research import state_schema

    state_schema.check(state, path)
    check_folders(directory)
    inventory = directory / "inventory.json"
    if file_sha256(inventory, "inventory.json") != state.get("inventory_manifest_sha256"):
        raise StorageError(f"Frozen input inventory hash changed: {inventory}")
    return state, materialise(directory, state)


def materialise(directory: Path, state: dict[str, Any]) -> bool:
    """Apply receipts written before a crash prevented the state save; True when something changed."""
    changed = False
    for index, op in enumerate(state.get("operations", [])):
        if op.get("status") != "pending":
            continue
        receipt_path = directory / "operations" / f"{operation_file_stem(op['id'])}.json"
        if not receipt_path.exists():
            continue
        try:
            receipt = load_object(read_regular(receipt_path, "operation receipt"), str(receipt_path))
        except (InvalidInputError, StorageError, NotFoundError):
            continue
        commit = receipt.get("_commit") or {}
        final = commit.get("operation") or {}
        if (receipt.get("research_id") != state["research_id"] or receipt.get("operation_id") != op["id"]
                or final.get("id") != op["id"] or final.get("digest") != op.get("digest")
                or final.get("status") not in ("ok", "partial", "error")):
            continue
        known = {s["id"]: s for s in state.get("sources", [])}
        for source in commit.get("sources", []):
            existing = known.get(source.get("id"))
            if existing is not None:
                if existing != source:
                    raise StorageError("Research receipt conflicts with an existing source ID: "
                                       f"{source.get('id')} ({receipt_path.name})")
                continue
            state.setdefault("sources", []).append(source)
        state["operations"][index] = final
        changed = True
    return changed


def open_session(app: App, research_id: str) -> Session:
    """The session, read without the lock (a consistent snapshot: state.json is replaced atomically)."""
    directory = locate(app, research_id)
    key = state_key(directory)  # taken before the read: a replace during it makes the key stale, never wrong
    state, changed = load_state(directory)
    session = Session(app, directory, state, changed)
    session.state_key = key
    return session


@contextlib.contextmanager
def lock(directory: Path) -> Iterator[None]:
    with file_lock(directory / ".state.json.lock", timeout=LOCK_TIMEOUT, busy_message=BUSY):
        yield


@contextlib.contextmanager
def locked_session(app: App, research_id: str, snapshot: Session | None = None) -> Iterator[Session]:
    """The session loaded under its lock; the caller saves what it changed before leaving.

    ``snapshot``: an unlocked read the caller has not changed. When state.json is still the file it was
    read from, its parsed and checked state is taken over instead of reading the file again (a large state
    is read once per step even when the step looked things up before taking the lock).
    """
    directory = locate(app, research_id)
    with lock(directory):
        if (snapshot is not None and snapshot.directory == directory and snapshot.state_key is not None
                and snapshot.state_key == state_key(directory)):
            _refuse_symlink(directory / "state.json")
            check_folders(directory)
            state = snapshot.state
            if file_sha256(directory / "inventory.json", "inventory.json") != state["inventory_manifest_sha256"]:
                raise StorageError(f"Frozen input inventory hash changed: {directory / 'inventory.json'}")
            changed = materialise(directory, state) or snapshot.materialised
        else:
            state, changed = load_state(directory)
        yield Session(app, directory, state, changed)


def create(root: Path, research_id: str, files: dict[str, str]) -> Path:
    """Publish a new session folder holding ``files`` (relative path → text) in one rename."""
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        staging = Path(tempfile.mkdtemp(prefix=f".{research_id}.staging-", dir=root))
    except OSError as exc:
        raise StorageError(f"{root}: cannot create the research folder ({exc.strerror})") from None
    target = root / research_id
    if os.path.lexists(target):
        os.rmdir(staging)
        raise StorageError(f"Research task folder already exists: {target}")
    try:
        for sub in ("operations", "evidence", "evidence/pages", "evidence/captures", "work"):
            (staging / sub).mkdir(mode=0o700)
        for name, text in files.items():
            atomic.write_text(staging / name, text)
        os.chmod(staging, 0o700)
        atomic.publish_dir(staging, target)
    except FileExistsError:
        raise StorageError(f"Research task folder already exists: {target}") from None
    except OSError as exc:
        raise StorageError(f"{root}: cannot create the research folder ({exc.strerror})") from None
    return target


def make_dirs(path: Path) -> None:
    """Create a folder inside a session (0700 for every new level); an existing symbolic link is refused."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.path.islink(path):
        raise StorageError(f"Research folder must not be a symbolic link: {path}")
