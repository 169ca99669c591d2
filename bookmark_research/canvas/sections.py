"""Parse one section JSON file into a flat, ordered list of item rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bookmark_research.canvas.layout import check_reference, protocol_kind
from bookmark_research.canvas.models import (
    DEFAULT_NOTE_COLOR,
    TAG_COLORS,
    IdentityEntry,
    PermanentNode,
    SectionHeader,
    TemporaryItem,
)
from bookmark_research.canvas.strictjson import load_object
from bookmark_research.canvas.validation import validate
from bookmark_research.errors import InvalidInputError

_BODY_KEYS = ("tree", "items", "identityMap")


@dataclass(slots=True)
class ItemRow:
    item_id: str
    parent_id: str | None
    item_type: str
    position: int
    preorder: int
    depth: int
    title: str
    url: str
    note: str
    note_color: str | None
    tags: list[dict[str, Any]]
    path: list[str]
    extra: dict[str, Any]  # fields without a column of their own (unknown fields included)
    metadata: dict[str, Any]
    synthetic: bool
    subtree_end: int = 0


@dataclass
class ParsedSection:
    file_path: str
    section_id: str
    section_type: str
    kind: str  # permanent | copy | temporary
    slot: str | None
    label: str
    title: str
    description_md: str
    is_anchor: bool
    inherit_ref: str | None
    header_raw: dict[str, Any]
    items: list[ItemRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _tags(raw_list: list[dict[str, Any]] | None, where: str, warnings: list[str]) -> list[dict[str, Any]]:
    """Validated tags, exact (color, text) duplicates dropped; unknown colours are a warning."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for raw in raw_list or []:
        key = (raw["color"], raw.get("text", ""))
        if key in seen:
            continue
        seen.add(key)
        if key[0] not in TAG_COLORS:
            warnings.append(f"{where}: tag colour {key[0]!r} is not one of {', '.join(TAG_COLORS)}")
        out.append(raw)
    return out


def _note(note: str | None, color: str | None) -> tuple[str, str | None]:
    text = (note or "").strip()
    if not text:
        return "", None
    return text, color or DEFAULT_NOTE_COLOR


def parse_section(data: bytes, file_path: str) -> ParsedSection:
    """Parse and validate a section file stored at package path ``file_path``."""
    raw = load_object(data, file_path)
    return parse_section_object(raw, file_path)


def section_header(raw: dict[str, Any], file_path: str) -> SectionHeader:
    if raw.get("format") != "bookmark-canvas-section":
        raise InvalidInputError(f"{file_path}: not a Bookmark Canvas section (format must be 'bookmark-canvas-section')")
    header_raw = {k: v for k, v in raw.items() if k not in _BODY_KEYS}
    return validate(SectionHeader, header_raw, file_path)


def default_section_id(header: SectionHeader) -> str | None:
    """The section id: the JSON ``id``, else the exporter's convention for permanent sections."""
    if header.id or header.sectionType != "permanent":
        return header.id
    if header.is_anchor:
        return f"permanent-section-copy-{header.copyId}"
    slot = (header.slot or "").strip()
    return "permanent-section" if slot == "A" else f"permanent-section-{slot}"


def parse_section_object(raw: dict[str, Any], file_path: str) -> ParsedSection:
    header = section_header(raw, file_path)
    header_raw = {k: v for k, v in raw.items() if k not in _BODY_KEYS}
    folder = protocol_kind(file_path)
    if folder is not None and folder != header.sectionType:
        raise InvalidInputError(
            f"{file_path}: field sectionType is {header.sectionType!r} but the file sits in the {folder} folder"
        )
    if header.sectionType == "permanent":
        return _parse_permanent(raw, header, header_raw, file_path)
    return _parse_temporary(raw, header, header_raw, file_path)


def _parse_permanent(raw: dict[str, Any], header: SectionHeader, header_raw: dict[str, Any], path: str) -> ParsedSection:
    slot = (header.slot or "").strip()
    if not slot:
        raise InvalidInputError(f"{path}: field slot: a permanent section needs a slot")
    if header.is_anchor:
        if not (header.copyId or "").strip():
            raise InvalidInputError(f"{path}: field copyId: a copy anchor needs a copyId")
        if raw.get("tree") not in (None, [], {}):
            raise InvalidInputError(f"{path}: field tree: copy anchors must not duplicate a tree")
        if header.inheritFrom is None:
            raise InvalidInputError(f"{path}: field inheritFrom: a copy anchor needs the path of its primary")
        check_reference(header.inheritFrom, f"{path}: field inheritFrom")
        return ParsedSection(path, default_section_id(header), "permanent", "copy", slot, slot, header.title, header.descriptionMd,
                             True, header.inheritFrom, header_raw)
    section = ParsedSection(path, default_section_id(header), "permanent", "permanent", slot, slot, header.title, header.descriptionMd,
                            False, None, header_raw)
    tree = raw.get("tree")
    if isinstance(tree, dict):
        roots_raw = [tree]
    elif isinstance(tree, list):
        roots_raw = tree
    else:
        raise InvalidInputError(f"{path}: field tree: a permanent section needs a tree object or list")
    identity = _identity_map(raw.get("identityMap"), path)
    walker = _Walker(section, identity)
    for position, node_raw in enumerate(roots_raw):
        walker.walk(node_raw, None, position, [], 0, "tree" if isinstance(tree, dict) else f"tree[{position}]")
    return section


def _identity_map(value: Any, path: str) -> dict[str, tuple[IdentityEntry, dict[str, Any]]]:
    out: dict[str, tuple[IdentityEntry, dict[str, Any]]] = {}
    if value is None:
        return out
    if isinstance(value, dict):
        entries = []
        for key, entry in value.items():
            if not isinstance(entry, dict):
                raise InvalidInputError(f"{path}: field identityMap.{key}: entries must be objects")
            if "syncId" in entry and entry["syncId"] != key:
                raise InvalidInputError(f"{path}: field identityMap.{key}: key and syncId disagree")
            entries.append({"syncId": key, **entry})
    elif isinstance(value, list):
        entries = value
    else:
        raise InvalidInputError(f"{path}: field identityMap: must be a list or an object")
    for i, entry_raw in enumerate(entries):
        if not isinstance(entry_raw, dict):
            raise InvalidInputError(f"{path}: field identityMap[{i}]: entries must be objects")
        entry = validate(IdentityEntry, entry_raw, path, f"identityMap[{i}]")
        if entry.syncId in out:
            raise InvalidInputError(f"{path}: field identityMap[{i}].syncId: duplicate syncId {entry.syncId!r}")
        out[entry.syncId] = (entry, entry_raw)
    return out


def _node_ok(raw: Any, temporary: bool) -> bool:
    """Hot-path shape check mirroring :class:`PermanentNode` / :class:`TemporaryItem`.

    Validating 100k nodes through pydantic costs more than the rest of parsing; a node that fails
    this check is validated by its pydantic model, which produces the precise error.
    """
    if type(raw) is not dict:
        return False
    ident = raw.get("id")
    if type(ident) is not str or not ident:
        return False
    for key in ("title", "url"):
        value = raw.get(key, "")
        if type(value) is not str:
            return False
    children = raw.get("children")
    if children is not None and type(children) is not list:
        return False
    if temporary:
        if raw.get("type") not in ("folder", "bookmark"):
            return False
        for key in ("sectionId", "note", "noteColor"):
            value = raw.get(key)
            if value is not None and type(value) is not str:
                return False
        tags = raw.get("tags")
        if tags is not None and (type(tags) is not list or not all(
                type(t) is dict and type(t.get("color")) is str and t["color"] and type(t.get("text", "")) is str
                for t in tags)):
            return False
    else:
        parent = raw.get("parentId")
        if parent is not None and type(parent) is not str:
            return False
    return True


#: Fields stored in their own columns; everything else a node carries is kept in ``extra``.
_PERMANENT_KEYS = frozenset({"id", "parentId", "title", "url", "children"})
_TEMPORARY_KEYS = frozenset({"id", "sectionId", "type", "title", "url", "children", "tags", "note", "noteColor"})


def _where(where: str | tuple[Any, int]) -> str:
    """A node's field path; the walk passes (parent, index) pairs and only errors build the text."""
    if type(where) is not tuple:
        return where  # type: ignore[return-value]
    parent, index = where
    return f"{_where(parent)}.children[{index}]"


class _Walker:
    """Depth-first walk that checks nodes and assigns positions, preorder, paths and metadata.

    This loop runs once per bookmark (100k+ for a large browser tree), so it keeps lookups local.
    """

    def __init__(self, section: ParsedSection, identity: dict[str, tuple[IdentityEntry, dict[str, Any]]] | None = None,
                 temporary: bool = False):
        self.section = section
        self.identity = identity or {}
        self.temporary = temporary
        self.known = _TEMPORARY_KEYS if temporary else _PERMANENT_KEYS
        self.items = section.items
        self.seen: set[str] = set()

    def _invalid(self, raw: Any, where: str | tuple[Any, int]) -> InvalidInputError:
        """The precise error for a node that failed the fast check, from its pydantic model."""
        model = TemporaryItem if self.temporary else PermanentNode
        node = raw if type(raw) is not dict else {k: v for k, v in raw.items() if k != "children"}
        validate(model, node, self.section.file_path, _where(where))
        return InvalidInputError(f"{self.section.file_path}: field {_where(where)}.children: must be a list")

    def walk(self, raw: Any, parent: str | None, position: int, path: list[str], depth: int,
             where: str | tuple[Any, int]) -> None:
        """Add ``raw`` and its subtree. ``where`` is its field path, or (parent's where, index), built on error."""
        if not _node_ok(raw, self.temporary):
            raise self._invalid(raw, where)
        file_path = self.section.file_path
        item_id: str = raw["id"]
        title: str = raw.get("title", "")
        url: str = raw.get("url", "")
        children = raw.get("children")
        metadata: dict[str, Any] = {}
        tags: list[dict[str, Any]] = []
        note, note_color = "", None
        if self.temporary:
            if raw.get("sectionId") not in (None, self.section.section_id):
                raise InvalidInputError(f"{file_path}: field {_where(where)}.sectionId: {raw['sectionId']!r} is not the section id")
            is_bookmark = raw["type"] == "bookmark"
            if is_bookmark and not url:
                raise InvalidInputError(f"{file_path}: field {_where(where)}.url: a bookmark needs a URL")
            if "tags" in raw or "note" in raw or "noteColor" in raw:
                tags = _tags(raw.get("tags"), f"{file_path}: item {item_id}", self.section.warnings)
                note, note_color = _note(raw.get("note"), raw.get("noteColor"))
                metadata = {k: raw[k] for k in ("tags", "note", "noteColor") if k in raw}
        else:
            # A root may name a parent outside the export (the browser's invisible root); children may not lie.
            if parent is not None and raw.get("parentId", parent) != parent:
                raise InvalidInputError(f"{file_path}: field {_where(where)}.parentId: disagrees with the tree position")
            is_bookmark = bool(url)
            entry = self.identity.get(item_id)
            if entry is not None:
                model, metadata = entry
                tags = _tags(metadata.get("tags"), f"{file_path}: identityMap {item_id}", self.section.warnings)
                note, note_color = _note(model.note, model.noteColor)
        if is_bookmark and children:
            raise InvalidInputError(f"{file_path}: field {_where(where)}.children: a bookmark cannot have children")
        seen = self.seen
        if item_id in seen:
            raise InvalidInputError(f"{file_path}: field {_where(where)}.id: duplicate item id {item_id!r}")
        seen.add(item_id)
        items = self.items
        extra_keys = raw.keys() - self.known
        if not extra_keys:
            extra: dict[str, Any] = {}
        elif len(extra_keys) == 1:  # typical: a browser's dateAdded
            (key,) = extra_keys
            extra = {key: raw[key]}
        else:
            extra = {k: v for k, v in raw.items() if k in extra_keys}
        row = ItemRow(item_id, parent, "bookmark" if is_bookmark else "folder", position, len(items), depth, title,
                      url, note, note_color, tags, path, extra, metadata,
                      parent is None and not is_bookmark and not title)
        items.append(row)
        if children:
            child_path = path + [title] if title else path
            walk = self.walk
            depth += 1
            for i, child in enumerate(children):
                walk(child, item_id, i, child_path, depth, (where, i))
        row.subtree_end = len(items) - 1


def _parse_temporary(raw: dict[str, Any], header: SectionHeader, header_raw: dict[str, Any], path: str) -> ParsedSection:
    if header.is_anchor:
        raise InvalidInputError(f"{path}: field fileRole: only permanent sections can be copy anchors")
    if not header.id:
        raise InvalidInputError(f"{path}: field id: a temporary section needs an id")
    label = header.label if isinstance(header.label, str) and header.label.strip() else "unknown"
    section = ParsedSection(path, header.id, "temporary", "temporary", None, label, header.title,
                            header.descriptionMd, False, None, header_raw)
    items_raw = raw.get("items")
    if not isinstance(items_raw, list):
        raise InvalidInputError(f"{path}: field items: a temporary section needs an items list")
    walker = _Walker(section, temporary=True)
    for i, item_raw in enumerate(items_raw):
        walker.walk(item_raw, None, i, [], 0, f"items[{i}]")
    return section
