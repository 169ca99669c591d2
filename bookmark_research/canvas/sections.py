"""Parse one section JSON file into a flat, ordered list of item rows."""

from __future__ import annotations

from collections.abc import Callable
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
from bookmark_research.canvas.jsonspan import load_with_digest
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
    #: A digest of the exact text of the file's ``tree`` value (see :mod:`jsonspan`), if it has one.
    tree_digest: str | None = None
    #: A permanent primary's identity-map entries by syncId.
    identity: dict[str, dict[str, Any]] | None = field(default=None, repr=False)
    #: The walk of the items not taken yet (see :meth:`rows`); ``None`` once taken.
    _walk: Callable[[_Walker], None] | None = field(default=None, repr=False)

    def rows(self, sink: Callable[[ItemRow], None]) -> None:
        """Walk the items, handing each row to ``sink`` once its subtree is done (children first).

        Rows stream: a writer stores them while the walk goes on, and none of them need stay in
        memory. An invalid node raises :class:`InvalidInputError` part-way (callers roll back).
        The raw JSON is released afterwards; a section's rows can be taken once.
        """
        walk, self._walk = self._walk, None
        if walk is not None:
            walk(_Walker(self, sink))


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


def open_section(data: bytes, file_path: str) -> ParsedSection:
    """Parse and validate a section file's header (the items are walked by :meth:`ParsedSection.rows`)."""
    raw, digest = load_with_digest(data, file_path, "tree")
    section = parse_section_object(raw, file_path)
    section.tree_digest = digest
    return section


def parse_section(data: bytes, file_path: str) -> ParsedSection:
    """Parse and validate a section file stored at package path ``file_path``, with its items in tree order."""
    section = open_section(data, file_path)
    section.rows(section.items.append)
    section.items.sort(key=lambda row: row.preorder)
    return section


def identity_fields(section: ParsedSection, item_id: str,
                    warnings: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]], str, str | None]:
    """What a permanent item takes from its identity-map entry: metadata, tags, note and note colour,
    as the walk does for every node (unknown tag colours are added to ``warnings``)."""
    entry = (section.identity or {}).get(item_id)
    if entry is None:
        return {}, [], "", None
    tags = _tags(entry.get("tags"), f"{section.file_path}: identityMap {item_id}", warnings)
    return (entry, tags, *_note(entry.get("note"), entry.get("noteColor")))


def unknown_colours(entry: dict[str, Any]) -> bool:
    """Whether an identity-map entry has a tag colour the walk warns about."""
    return any(tag["color"] not in TAG_COLORS for tag in entry.get("tags") or [])


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
    section.identity = identity

    def walk(walker: _Walker) -> None:
        walker.identity = identity
        for position, node_raw in enumerate(roots_raw):
            walker.walk(node_raw, None, position, [], 0, "tree" if isinstance(tree, dict) else f"tree[{position}]")

    section._walk = walk
    return section


def _identity_map(value: Any, path: str) -> dict[str, dict[str, Any]]:
    """Identity-map entries by syncId, each checked against :class:`IdentityEntry`."""
    out: dict[str, dict[str, Any]] = {}
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
        if not _annotations_ok(entry_raw) or type(entry_raw.get("syncId")) is not str or not entry_raw["syncId"]:
            validate(IdentityEntry, entry_raw, path, f"identityMap[{i}]")  # raises the precise error
        sync_id = entry_raw["syncId"]
        if sync_id in out:
            raise InvalidInputError(f"{path}: field identityMap[{i}].syncId: duplicate syncId {sync_id!r}")
        out[sync_id] = entry_raw
    return out


def _annotations_ok(raw: dict[str, Any]) -> bool:
    """Hot-path check of the tags / note / noteColor fields, mirroring :class:`Annotated_`."""
    for key in ("note", "noteColor"):
        value = raw.get(key)
        if value is not None and type(value) is not str:
            return False
    tags = raw.get("tags")
    return tags is None or (type(tags) is list and all(
        type(t) is dict and type(t.get("color")) is str and t["color"] and type(t.get("text", "")) is str
        for t in tags))


#: Fields stored in their own columns; everything else a node carries is kept in ``extra``.
_PERMANENT_KEYS = frozenset({"id", "parentId", "title", "url", "children"})
_TEMPORARY_KEYS = frozenset({"id", "sectionId", "type", "title", "url", "children", "tags", "note", "noteColor"})
_ANNOTATION_KEYS = ("tags", "note", "noteColor")


def _where(where: str | tuple[Any, int]) -> str:
    """A node's field path; the walk passes (parent, index) pairs and only errors build the text."""
    if type(where) is not tuple:
        return where  # type: ignore[return-value]
    parent, index = where
    return f"{_where(parent)}.children[{index}]"


def _extra(raw: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    extra_keys = raw.keys() - known
    if not extra_keys:
        return {}
    if len(extra_keys) == 1:  # typical: a browser's dateAdded
        (key,) = extra_keys
        return {key: raw[key]}
    return {k: v for k, v in raw.items() if k in extra_keys}


class _Walker:
    """Depth-first walk that checks nodes and assigns positions, preorder, paths and metadata.

    This loop runs once per bookmark (100k+ for a large browser tree): the shape checks of
    :class:`PermanentNode` / :class:`TemporaryItem` are inlined (validating every node through
    pydantic costs more than the rest of parsing); a node that fails them is validated by its
    model, which produces the precise error.
    """

    def __init__(self, section: ParsedSection, sink: Callable[[ItemRow], None]):
        self.section = section
        self.identity: dict[str, dict[str, Any]] = {}
        self.temporary = section.kind == "temporary"
        self.sink = sink
        self.count = 0  # rows so far: the next row's preorder
        self.seen: set[str] = set()
        self.walk = self._temporary if self.temporary else self._permanent

    def _invalid(self, raw: Any, where: str | tuple[Any, int]) -> InvalidInputError:
        """The precise error for a node that failed the fast check, from its pydantic model."""
        model = TemporaryItem if self.temporary else PermanentNode
        node = raw if type(raw) is not dict else {k: v for k, v in raw.items() if k != "children"}
        validate(model, node, self.section.file_path, _where(where))
        return InvalidInputError(f"{self.section.file_path}: field {_where(where)}.children: must be a list")

    def _error(self, where: str | tuple[Any, int], field: str, message: str) -> InvalidInputError:
        return InvalidInputError(f"{self.section.file_path}: field {_where(where)}.{field}: {message}")

    def _permanent(self, raw: Any, parent: str | None, position: int, path: list[str], depth: int,
                   where: str | tuple[Any, int]) -> None:
        """Add ``raw`` and its subtree. ``where`` is its field path, or (parent's where, index), built on error."""
        if type(raw) is not dict:
            raise self._invalid(raw, where)
        get = raw.get
        item_id = get("id")
        title = get("title", "")
        url = get("url", "")
        children = get("children")
        parent_id = get("parentId")
        if (type(item_id) is not str or not item_id or type(title) is not str or type(url) is not str
                or (children is not None and type(children) is not list)
                or (parent_id is not None and type(parent_id) is not str)):
            raise self._invalid(raw, where)
        # A root may name a parent outside the export (the browser's invisible root); children may not lie.
        if parent is not None and get("parentId", parent) != parent:
            raise self._error(where, "parentId", "disagrees with the tree position")
        if url and children:
            raise self._error(where, "children", "a bookmark cannot have children")
        entry = self.identity.get(item_id)
        if entry is None:
            metadata: dict[str, Any] = {}
            tags: list[dict[str, Any]] = []
            note, note_color = "", None
        else:
            metadata = entry
            tags = _tags(entry.get("tags"), f"{self.section.file_path}: identityMap {item_id}", self.section.warnings)
            note, note_color = _note(entry.get("note"), entry.get("noteColor"))
        if item_id in self.seen:
            raise self._error(where, "id", f"duplicate item id {item_id!r}")
        self.seen.add(item_id)
        preorder = self.count
        self.count = preorder + 1
        row = ItemRow(item_id, parent, "bookmark" if url else "folder", position, preorder, depth, title, url, note,
                      note_color, tags, path, _extra(raw, _PERMANENT_KEYS), metadata, parent is None and not url and not title)
        if children:
            child_path = path + [title] if title else path
            walk = self._permanent
            depth += 1
            for i, child in enumerate(children):
                walk(child, item_id, i, child_path, depth, (where, i))
        row.subtree_end = self.count - 1
        self.sink(row)

    def _temporary(self, raw: Any, parent: str | None, position: int, path: list[str], depth: int,
                   where: str | tuple[Any, int]) -> None:
        """Add ``raw`` and its subtree (a temporary section's item)."""
        if type(raw) is not dict:
            raise self._invalid(raw, where)
        get = raw.get
        item_id = get("id")
        title = get("title", "")
        url = get("url", "")
        children = get("children")
        kind = get("type")
        section_id = get("sectionId")
        if (type(item_id) is not str or not item_id or type(title) is not str or type(url) is not str
                or (children is not None and type(children) is not list) or kind not in ("folder", "bookmark")
                or (section_id is not None and type(section_id) is not str) or not _annotations_ok(raw)):
            raise self._invalid(raw, where)
        if section_id is not None and section_id != self.section.section_id:
            raise self._error(where, "sectionId", f"{section_id!r} is not the section id")
        is_bookmark = kind == "bookmark"
        if is_bookmark and not url:
            raise self._error(where, "url", "a bookmark needs a URL")
        if is_bookmark and children:
            raise self._error(where, "children", "a bookmark cannot have children")
        metadata: dict[str, Any] = {}
        tags: list[dict[str, Any]] = []
        note, note_color = "", None
        if "tags" in raw or "note" in raw or "noteColor" in raw:
            tags = _tags(get("tags"), f"{self.section.file_path}: item {item_id}", self.section.warnings)
            note, note_color = _note(get("note"), get("noteColor"))
            metadata = {k: raw[k] for k in _ANNOTATION_KEYS if k in raw}
        if item_id in self.seen:
            raise self._error(where, "id", f"duplicate item id {item_id!r}")
        self.seen.add(item_id)
        preorder = self.count
        self.count = preorder + 1
        row = ItemRow(item_id, parent, kind, position, preorder, depth, title, url, note, note_color, tags, path,
                      _extra(raw, _TEMPORARY_KEYS), metadata, parent is None and not is_bookmark and not title)
        if children:
            child_path = path + [title] if title else path
            walk = self._temporary
            depth += 1
            for i, child in enumerate(children):
                walk(child, item_id, i, child_path, depth, (where, i))
        row.subtree_end = self.count - 1
        self.sink(row)


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

    def walk(walker: _Walker) -> None:
        for i, item_raw in enumerate(items_raw):
            walker.walk(item_raw, None, i, [], 0, f"items[{i}]")

    section._walk = walk
    return section
