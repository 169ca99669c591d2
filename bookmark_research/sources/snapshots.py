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
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bookmark_research.errors import InvalidInputError, StorageError

FORMAT = "bookmark-research-snapshot"
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
        """Write a version (atomically, via a staging directory); returns (dir, created)."""
        target = self.version_dir(source_id, version_id)
        if target.exists():
            verify(target / "package", expected=manifest["files"])
            return target, False
        if self.root.is_symlink():
            raise StorageError(f"{self.root}: the snapshot store must not be a symlink")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=self.root))
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
            (staging / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2), encoding="utf-8")
            os.replace(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return target, True

    def retire(self, source_id: str) -> Path | None:
        """Move a source's snapshots aside before deleting its rows; undo with :meth:`unretire`."""
        src = self.source_dir(source_id)
        if not src.exists():
            return None
        aside = self.root / f".removed-{src.name}-{os.urandom(8).hex()}"
        os.replace(src, aside)
        return aside

    def unretire(self, source_id: str, aside: Path) -> None:
        src = self.source_dir(source_id)
        if not src.exists():
            os.replace(aside, src)


def _same(path: Path, digest: str) -> bool:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == digest
    except OSError:
        return False


def remove_tree(path: Path) -> None:
    def onerror(func: Any, p: str, _exc: Any) -> None:
        try:
            os.chmod(os.path.dirname(p), 0o755)
            os.chmod(p, 0o644)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=onerror)


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
