"""The settings file: validated, closed sections, atomic writes, credentials never shown.

Location: ``$BOOKMARK_RESEARCH_CONFIG``, else ``${XDG_CONFIG_HOME:-~/.config}/bookmark-research/settings.json``.
Only values that differ from the defaults need to be stored; the file is re-read on every use, so a
running server picks up changes without a restart.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bookmark_research import atomic
from bookmark_research.canvas.strictjson import load_object
from bookmark_research.canvas.validation import field_path
from bookmark_research.errors import InvalidInputError, StorageError

WebProvider = Literal["exa", "parallel", "tavily", "jina"]
FetchProvider = Literal["exa", "parallel", "tavily", "jina", "direct"]
ScholarlyProvider = Literal["openalex", "semantic_scholar", "crossref", "pubmed", "arxiv"]
CREDENTIAL_NAMES = ("EXA_API_KEY", "PARALLEL_API_KEY", "TAVILY_API_KEY", "JINA_API_KEY", "OPENALEX_API_KEY",
                    "SEMANTIC_SCHOLAR_API_KEY", "NCBI_API_KEY")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _unique(value: list[str]) -> list[str]:
    if len(set(value)) != len(value):
        raise ValueError("must not repeat a provider")
    return value


class SearchSettings(_Section):
    providers: list[WebProvider] = Field(default_factory=lambda: ["exa", "parallel"], min_length=1, max_length=4)
    fallback_providers: list[WebProvider] = Field(default_factory=lambda: ["tavily", "jina"], max_length=4)
    limit_per_target: int = Field(5, ge=1, le=20)

    _check = field_validator("providers", "fallback_providers")(_unique)


class FetchSettings(_Section):
    providers: list[FetchProvider] = Field(default_factory=lambda: ["exa", "parallel", "jina", "direct"],
                                           min_length=1, max_length=5)
    max_characters: int = Field(12_000, ge=100, le=100_000)

    _check = field_validator("providers")(_unique)


class ArchiveSettings(_Section):
    enabled: bool = True


class DirectSettings(_Section):
    allow_private_networks: bool = False
    max_bytes: int = Field(4 * 1024 * 1024, ge=64 * 1024, le=64 * 1024 * 1024)
    timeout_seconds: float = Field(15.0, gt=0, le=60)
    respect_robots: bool = True
    min_interval_seconds: float = Field(1.0, ge=0, le=60, description="Politeness delay between requests to one host")


class ScholarlySettings(_Section):
    providers: list[ScholarlyProvider] = Field(
        default_factory=lambda: ["openalex", "semantic_scholar", "crossref", "pubmed", "arxiv"], min_length=1)
    openalex_mailto: str | None = None
    crossref_mailto: str | None = None

    _check = field_validator("providers")(_unique)


def _absolute_or_none(value: str | None) -> str | None:
    if value is not None and not Path(value).expanduser().is_absolute():
        raise ValueError("must be an absolute path (or null for the default)")
    return value


class OutputSettings(_Section):
    directory: str | None = Field(None, description="Where research sessions are kept (default: <data dir>/research)")

    _check = field_validator("directory")(_absolute_or_none)


class WikiSettings(_Section):
    directory: str | None = Field(None, description="Where the wiki is kept (default: <data dir>/wiki)")
    after_research: Literal["suggest", "auto", "off"] = "suggest"

    _check = field_validator("directory")(_absolute_or_none)


class Credentials(_Section):
    EXA_API_KEY: str | None = None
    PARALLEL_API_KEY: str | None = None
    TAVILY_API_KEY: str | None = None
    JINA_API_KEY: str | None = None
    OPENALEX_API_KEY: str | None = None
    SEMANTIC_SCHOLAR_API_KEY: str | None = None
    NCBI_API_KEY: str | None = None


class Settings(_Section):
    timeout_seconds: float = Field(30.0, gt=0, le=60, description="Per-request timeout for provider calls")
    search: SearchSettings = Field(default_factory=SearchSettings)
    fetch: FetchSettings = Field(default_factory=FetchSettings)
    archive: ArchiveSettings = Field(default_factory=ArchiveSettings)
    direct: DirectSettings = Field(default_factory=DirectSettings)
    scholarly: ScholarlySettings = Field(default_factory=ScholarlySettings)
    output: OutputSettings = Field(default_factory=OutputSettings)
    wiki: WikiSettings = Field(default_factory=WikiSettings)
    credentials: Credentials = Field(default_factory=Credentials)


def settings_path() -> Path:
    explicit = os.environ.get("BOOKMARK_RESEARCH_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "bookmark-research" / "settings.json"


def _invalid(path: Path, exc: ValidationError) -> InvalidInputError:
    first = exc.errors()[0]
    return InvalidInputError(f"{path}: field {field_path(tuple(first['loc']))}: {first['msg']}")


def load(path: Path | None = None) -> Settings:
    """The effective settings (defaults when the file does not exist)."""
    path = path or settings_path()
    if not path.exists():
        return Settings()
    try:
        data = load_object(path.read_bytes(), str(path))
    except OSError as exc:
        raise StorageError(f"{path}: cannot read settings ({exc.strerror})") from None
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise _invalid(path, exc) from None


def valid_keys(model: type[BaseModel] = Settings, prefix: str = "") -> list[str]:
    keys: list[str] = []
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys.extend(valid_keys(annotation, f"{prefix}{name}."))
        else:
            keys.append(prefix + name)
    return keys


def parse_value(text: str) -> Any:
    """A CLI value: JSON when it parses (true, 3, ["a","b"]), otherwise the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


#: Settings that hold a safety guard, with the test of whether a change (old → new value) weakens it.
#: Weakening one is terminal-only, like setting a credential: ``update_settings`` over MCP refuses it
#: (an agent steered by text in a fetched page must not open the SSRF guard), ``config set`` allows it.
#: Tightening a guard, or resetting it to its safe default, is allowed everywhere.
STORE_DIRS = ("output.directory", "wiki.directory")  # folders records are written into (checked on set)
GUARDS: dict[str, Callable[[Any, Any], bool]] = {
    "direct.allow_private_networks": lambda old, new: bool(new) and not old,  # the SSRF guard
    "direct.respect_robots": lambda old, new: bool(old) and not new,
    "direct.min_interval_seconds": lambda old, new: new < old,  # politeness towards one host
    "direct.max_bytes": lambda old, new: new > old,  # size cap of a fetched page
    "direct.timeout_seconds": lambda old, new: new > old,
    "timeout_seconds": lambda old, new: new > old,  # time cap of provider calls
    "output.directory": lambda old, new: new != old,  # where files are written
    "wiki.directory": lambda old, new: new != old,
}


def _value(settings: Settings, key: str) -> Any:
    node: Any = settings
    for part in key.split("."):
        node = getattr(node, part)
    return node


def update(changes: dict[str, Any], *, terminal: bool, path: Path | None = None) -> Settings:
    """Apply dotted-key changes, validate the whole result, then write it atomically (or nothing).

    ``terminal`` is true only for a person at a terminal (``config set``): credentials and changes
    that weaken a safety guard (:data:`GUARDS`) are refused otherwise.
    """
    path = path or settings_path()
    before = load(path)
    current = before.model_dump(exclude_defaults=True)
    keys = valid_keys()
    for key, value in changes.items():
        if key not in keys:
            raise InvalidInputError(f"unknown setting {key!r}; valid keys: {', '.join(keys)}")
        if key.startswith("credentials.") and not terminal:
            raise InvalidInputError(f"{key}: credentials cannot be set here; use the environment or "
                                    "'bookmark-research config set' in a terminal")
        node = current
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    try:
        settings = Settings.model_validate(current)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = field_path(tuple(first["loc"]))
        raise InvalidInputError(f"setting {where}: {first['msg']}") from None
    for key in STORE_DIRS:  # a folder we write records into must lie outside canvas packages
        folder = _value(settings, key) if key in changes else None
        if folder is not None:
            from bookmark_research.paths import enclosing_package

            package = enclosing_package(Path(folder).expanduser().resolve())
            if package is not None:
                raise InvalidInputError(f"{key}: {folder} is inside a canvas package ({package}); choose a folder "
                                        "outside canvas packages; nothing was changed")
    if not terminal:
        for key in changes:
            weakens = GUARDS.get(key)
            if weakens is not None and weakens(_value(before, key), _value(settings, key)):
                raise InvalidInputError(
                    f"{key}: this change weakens a safety guard and is allowed only from a terminal "
                    f"('bookmark-research config set {key} VALUE'); nothing was changed")
    _write(path, settings.model_dump(exclude_defaults=True))
    return settings


def _write(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_json(path, data, mode=0o600)  # it may hold credentials
    except OSError as exc:
        raise StorageError(f"{path}: cannot write settings ({exc.strerror}); set BOOKMARK_RESEARCH_CONFIG") from None


def public_view(settings: Settings) -> dict[str, Any]:
    """Settings as shown to users and agents: credentials reduced to whether and where they are set."""
    data = settings.model_dump(exclude={"credentials"})
    data["credentials"] = {name: credential_state(name, settings) for name in CREDENTIAL_NAMES}
    return data


def credential(name: str, settings: Settings | None = None) -> str | None:
    """A credential from the environment, else from the settings file. Never print the result."""
    value = os.environ.get(name)
    if value:
        return value
    settings = settings if settings is not None else load()
    return getattr(settings.credentials, name, None) or None


def credential_state(name: str, settings: Settings) -> dict[str, Any]:
    if os.environ.get(name):
        return {"configured": True, "source": "environment"}
    if getattr(settings.credentials, name, None):
        return {"configured": True, "source": "settings_file"}
    return {"configured": False, "source": None}
