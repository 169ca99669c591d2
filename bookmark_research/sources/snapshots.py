"""Managed snapshots: an immutable, content-addressed copy of every version of a source.

Layout under the data directory::

    snapshots/<sha256(source_id)[:24]>/<version_id>/manifest.json
    snapshots/<sha256(source_id)[:24]>/<version_id>/package/<files>

``version_id`` is derived from the file map (path → sha256), so identical content reuses one
version. Files identical to the previous version are hard-linked rather than copied.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from bookmark_research import atomic
from bookmark_research.errors import InvalidInputError, StorageError
from bookmark_research.failpoints import crash_point

FORMAT = "bookmark-research-snapshot"
REMOVED_PREFIX = ".removed-"  # a folder moved aside to be deleted
MAX_MANIFEST_BYTES = 8_000_000


def source_key(source_id: str) -> str:
    return hashlib.sha256(source_id.encode("utf-8")).hexdigest()[:24]


def version_id_for(files: dict[str, str]) -> str:
    canonical = json.dumps(sorted(files.items()), ensure_ascii=False, separators=(",", ":"))
    return "v-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:24]


class SnapshotStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def source_dir(self, source_id: str) -> Path:
        return self.root / source_key(source_id)

    def version_dir(self, source_id: str, version_id: str) -> Path:
        return self.source_dir(source_id) / version_id

    def publish(
        self,
        source_id: str,
        version_id: str,
        contents: dict[str, bytes],
        manifest: dict[str, Any],
        previous: Path | None,
    ) -> tuple[Path, bool]:
        """Write a version durably (staged, fsynced, renamed); returns (dir, created).

        An existing version folder is reused when it verifies; a damaged one (torn by a power loss,
        or changed by hand) is written again from ``contents``, which hold the same files by
        construction (the version id is their hash). ``created`` is true only for a folder that did
        not exist, i.e. one a failed sync may delete again.
        """
        target = self.version_dir(source_id, version_id)
        replaced = False
        if target.exists():
            if intact(target, manifest["files"]):
                return target, False
            self._discard(target)
            replaced = True
        if self.root.is_symlink():
            raise StorageError(f"{self.root}: the snapshot store must not be a symlink")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            staging = atomic.staging_dir(self.root)
        except OSError as exc:
            raise StorageError(f"{self.root}: cannot write snapshots ({exc.strerror}); check the data directory") from None
        try:
            package = staging / "package"
            for rel, data in contents.items():
                dest = package / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                old = previous / rel if previous is not None else None
                if old is not None and old.is_file() and not old.is_symlink() and _same(old, manifest["files"][rel]):
                    try:
                        os.link(old, dest)
                        continue
                    except OSError:
                        pass
                dest.write_bytes(data)
                dest.chmod(0o444)
            (staging / "manifest.json").write_text(atomic.dump_json(manifest), encoding="utf-8")
            crash_point("snapshot:staged")
            atomic.publish_dir(staging, target)  # every file fsynced, then one rename, then the folder
        except OSError as exc:
            raise StorageError(f"{self.root}: cannot write snapshots ({exc.strerror}); check the data directory") from None
        return target, not replaced

    def _discard(self, path: Path) -> None:
        aside = self.root / f"{REMOVED_PREFIX}{os.urandom(8).hex()}"
        os.replace(path, aside)
        atomic.remove_tree(aside)

    def retire(self, source_id: str) -> bool:
        """Delete a source's snapshots (after its rows are committed): moved aside in one rename, then
        deleted; what a crash leaves is removed by the next :meth:`sweep`."""
        src = self.source_dir(source_id)
        if not src.exists():
            return False
        self._discard(src)
        return True

    def sweep(self, referenced: dict[str, set[str]], before: float) -> list[str]:
        """Remove what interrupted syncs and removals left behind, all modified before ``before``:
        staging folders, folders moved aside, version folders no history row references and the
        folders of sources that no longer exist. ``referenced`` maps :func:`source_key` to version ids.
        Call it holding the index's write lock, so no other sync is publishing meanwhile."""
        if not self.root.is_dir() or self.root.is_symlink():
            return []
        removed = atomic.remove_leftovers(self.root, before, (REMOVED_PREFIX,))
        for entry in list(os.scandir(self.root)):
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            versions = referenced.get(entry.name, set())
            removed += [f"{entry.name}/{n}" for n in atomic.remove_leftovers(entry.path, before)]
            for child in list(os.scandir(entry.path)):
                try:
                    old = child.stat(follow_symlinks=False).st_mtime < before
                except OSError:
                    continue
                if old and child.name not in versions and child.is_dir(follow_symlinks=False):
                    atomic.remove_tree(child.path)
                    removed.append(f"{entry.name}/{child.name}")
            if entry.name not in referenced:
                try:
                    os.rmdir(entry.path)  # only once it is empty
                    removed.append(entry.name)
                except OSError:
                    pass
        return removed


def intact(version_dir: Path, expected: dict[str, str]) -> bool:
    """Whether a version folder holds its manifest and exactly the expected, unchanged files."""
    manifest = read_manifest(version_dir)
    if manifest is None or manifest.get("files") != expected:
        return False
    try:
        verify(version_dir / "package", expected)
    except InvalidInputError:
        return False
    return True


def _same(path: Path, digest: str) -> bool:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == digest
    except OSError:
        return False


def remove_tree(path: Path) -> None:
    atomic.remove_tree(path)


def read_manifest(version_dir: Path) -> dict[str, Any] | None:
    manifest = version_dir / "manifest.json"
    if manifest.is_symlink() or not manifest.is_file() or manifest.stat().st_size > MAX_MANIFEST_BYTES:
        return None
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def recognise(package_dir: Path) -> dict[str, Any] | None:
    """The manifest when ``package_dir`` is the ``package/`` folder of a managed snapshot."""
    if package_dir.name != "package":
        return None
    return read_manifest(package_dir.parent)


def verify(package_dir: Path, expected: dict[str, str], contents: dict[str, bytes] | None = None) -> None:
    """Check a snapshot's files against its manifest hashes."""
    for rel, digest in expected.items():
        data = contents.get(rel) if contents is not None else None
        if data is None:
            try:
                data = (package_dir / rel).read_bytes()
            except OSError:
                raise InvalidInputError(f"{package_dir}: managed snapshot integrity check failed: {rel} is missing") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise InvalidInputError(f"{package_dir}: managed snapshot integrity check failed: {rel} was changed")
    if contents is not None and set(contents) - set(expected):
        extra = sorted(set(contents) - set(expected))[0]
        raise InvalidInputError(f"{package_dir}: managed snapshot integrity check failed: unexpected file {extra}")
