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
    Tag,
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
    ancestor_ids: list[str]
    raw: dict[str, Any]
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


def _tags(raw_tags: list[Tag] | None, raw_list: Any, where: str, warnings: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for tag, raw in zip(raw_tags or [], raw_list or []):
        key = (tag.color, tag.text)
        if key in seen:
            continue
        seen.add(key)
        if tag.color not in TAG_COLORS:
            warnings.append(f"{where}: tag colour {tag.color!r} is not one of {', '.join(TAG_COLORS)}")
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
        sid = header.id or f"permanent-section-copy-{header.copyId}"
        return ParsedSection(path, sid, "permanent", "copy", slot, slot, header.title, header.descriptionMd,
                             True, header.inheritFrom, header_raw)
    sid = header.id or ("permanent-section" if slot == "A" else f"permanent-section-{slot}")
    section = ParsedSection(path, sid, "permanent", "permanent", slot, slot, header.title, header.descriptionMd,
                            False, None, header_raw)
    tree = raw.get("tree")
    if isinstance(tree, dict):
        roots_raw = [tree]
    elif isinstance(tree, list):
        roots_raw = tree
    else:
        raise InvalidInputError(f"{path}: field tree: a permanent section needs a tree object or list")
    identity = _identity_map(raw.get("identityMap"), path)
    roots = [validate(PermanentNode, node, path, f"tree[{i}]") for i, node in enumerate(roots_raw)]
    walker = _Walker(section, identity)
    for position, (node, node_raw) in enumerate(zip(roots, roots_raw)):
        walker.permanent(node, node_raw, None, position, [], [], f"tree[{position}]")
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


class _Walker:
    """Depth-first walk that assigns positions, preorder, ancestors and metadata."""

    def __init__(self, section: ParsedSection, identity: dict[str, tuple[IdentityEntry, dict[str, Any]]] | None = None):
        self.section = section
        self.identity = identity or {}
        self.seen: set[str] = set()

    def _add(self, row: ItemRow, where: str) -> None:
        if row.item_id in self.seen:
            raise InvalidInputError(f"{self.section.file_path}: field {where}.id: duplicate item id {row.item_id!r}")
        self.seen.add(row.item_id)
        self.section.items.append(row)

    @staticmethod
    def _strip_children(raw: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in raw.items() if k != "children"} if "children" in raw else raw

    def permanent(self, node: PermanentNode, raw: dict[str, Any], parent: str | None, position: int,
                  path: list[str], ancestors: list[str], where: str) -> None:
        file_path = self.section.file_path
        # A root may name a parent outside the export (the browser's invisible root); children may not lie.
        if parent is not None and node.parentId is not None and node.parentId != parent:
            raise InvalidInputError(f"{file_path}: field {where}.parentId: disagrees with the tree position")
        is_bookmark = bool(node.url)
        children = node.children or []
        if is_bookmark and children:
            raise InvalidInputError(f"{file_path}: field {where}.children: a bookmark cannot have children")
        meta_entry = self.identity.get(node.id)
        metadata: dict[str, Any] = {}
        tags: list[dict[str, Any]] = []
        note, note_color = "", None
        if meta_entry is not None:
            entry, entry_raw = meta_entry
            metadata = entry_raw
            tags = _tags(entry.tags, entry_raw.get("tags"), f"{file_path}: identityMap {node.id}", self.section.warnings)
            note, note_color = _note(entry.note, entry.noteColor)
        row = ItemRow(node.id, parent, "bookmark" if is_bookmark else "folder", position, len(self.section.items),
                      len(ancestors), node.title, node.url, note, note_color, tags, path, ancestors,
                      self._strip_children(raw), metadata, parent is None and not is_bookmark and not node.title)
        self._add(row, where)
        if children:
            child_path = path + [node.title] if node.title else path
            child_ancestors = ancestors + [node.id]
            raw_children = raw.get("children") or []
            for i, (child, child_raw) in enumerate(zip(children, raw_children)):
                self.permanent(child, child_raw, node.id, i, child_path, child_ancestors, f"{where}.children[{i}]")
        row.subtree_end = len(self.section.items) - 1

    def temporary(self, item: TemporaryItem, raw: dict[str, Any], parent: str | None, position: int,
                  path: list[str], ancestors: list[str], where: str) -> None:
        file_path = self.section.file_path
        if item.sectionId is not None and item.sectionId != self.section.section_id:
            raise InvalidInputError(f"{file_path}: field {where}.sectionId: {item.sectionId!r} is not the section id")
        children = item.children or []
        if item.type == "bookmark":
            if not item.url:
                raise InvalidInputError(f"{file_path}: field {where}.url: a bookmark needs a URL")
            if children:
                raise InvalidInputError(f"{file_path}: field {where}.children: a bookmark cannot have children")
        tags = _tags(item.tags, raw.get("tags"), f"{file_path}: item {item.id}", self.section.warnings)
        note, note_color = _note(item.note, item.noteColor)
        metadata = {k: raw[k] for k in ("tags", "note", "noteColor") if k in raw}
        row = ItemRow(item.id, parent, item.type, position, len(self.section.items), len(ancestors), item.title,
                      item.url, note, note_color, tags, path, ancestors, self._strip_children(raw), metadata,
                      parent is None and item.type == "folder" and not item.title)
        self._add(row, where)
        if children:
            child_path = path + [item.title] if item.title else path
            child_ancestors = ancestors + [item.id]
            for i, (child, child_raw) in enumerate(zip(children, raw.get("children") or [])):
                self.temporary(child, child_raw, item.id, i, child_path, child_ancestors, f"{where}.children[{i}]")
        row.subtree_end = len(self.section.items) - 1


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
    walker = _Walker(section)
    for i, item_raw in enumerate(items_raw):
        item = validate(TemporaryItem, item_raw, path, f"items[{i}]")
        walker.temporary(item, item_raw, None, i, [], [], f"items[{i}]")
    return section
