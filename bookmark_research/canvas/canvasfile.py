"""Parse the JSON Canvas entry: nodes, edges, directions and geometric group membership."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bookmark_research.canvas.layout import is_section_reference, reference_candidates
from bookmark_research.canvas.models import CanvasDocument
from bookmark_research.canvas.strictjson import load_object
from bookmark_research.canvas.validation import validate
from bookmark_research.errors import InvalidInputError


@dataclass(slots=True)
class NodeRow:
    node_id: str
    node_type: str
    position: int
    x: float
    y: float
    width: float
    height: float
    label: str | None
    text: str | None
    color: str | None
    file_ref: str | None
    file_candidates: list[str]
    raw: dict[str, Any]


@dataclass(slots=True)
class EdgeRow:
    edge_id: str
    position: int
    from_node: str
    to_node: str
    from_end: str
    to_end: str
    label: str | None
    raw: dict[str, Any]


@dataclass
class ParsedCanvas:
    file_path: str
    nodes: list[NodeRow] = field(default_factory=list)
    edges: list[EdgeRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def edge_direction(from_end: str, to_end: str) -> str:
    """JSON Canvas ends to a direction: forward, reverse, both or none."""
    from_arrow, to_arrow = from_end == "arrow", to_end == "arrow"
    if from_arrow and to_arrow:
        return "both"
    if to_arrow:
        return "forward"
    if from_arrow:
        return "reverse"
    return "none"


def parse_canvas(data: bytes, file_path: str) -> ParsedCanvas:
    raw = load_object(data, file_path)
    for key in ("nodes", "edges"):
        if key in raw and not isinstance(raw[key], list):
            raise InvalidInputError(f"{file_path}: field {key}: must be a list")
    doc = validate(CanvasDocument, raw, file_path)
    out = ParsedCanvas(file_path)
    ids: set[str] = set()
    raw_nodes = raw.get("nodes") or []
    for i, (node, node_raw) in enumerate(zip(doc.nodes, raw_nodes)):
        where = f"{file_path}: field nodes[{i}]"
        if node.id in ids:
            raise InvalidInputError(f"{where}.id: duplicate node id {node.id!r}")
        ids.add(node.id)
        candidates: list[str] = []
        if node.type == "file":
            if not isinstance(node.file, str):
                raise InvalidInputError(f"{where}.file: a file node needs a file path")
            if is_section_reference(node.file, f"{where}.file"):
                candidates = reference_candidates(node.file, f"{where}.file")
            else:
                out.warnings.append(
                    f"{file_path}: node {node.id!r} points at {node.file!r}, which is not a section file; "
                    "kept on the canvas, ignored as bookmark data"
                )
        elif node.type == "link":
            out.warnings.append(f"{file_path}: link node {node.id!r} is not bookmark data; kept on the canvas only")
        elif node.type not in ("text", "group"):
            out.warnings.append(f"{file_path}: node {node.id!r} has unknown type {node.type!r}; kept on the canvas only")
        text = node.text if node.type != "link" else node.url
        out.nodes.append(NodeRow(node.id, node.type, i, node.x, node.y, node.width, node.height, node.label, text,
                                 node.color, node.file, candidates, node_raw))
    edge_ids: set[str] = set()
    for i, (edge, edge_raw) in enumerate(zip(doc.edges, raw.get("edges") or [])):
        where = f"{file_path}: field edges[{i}]"
        if edge.id in edge_ids:
            raise InvalidInputError(f"{where}.id: duplicate edge id {edge.id!r}")
        edge_ids.add(edge.id)
        for end in ("fromNode", "toNode"):
            if getattr(edge, end) not in ids:
                raise InvalidInputError(f"{where}.{end}: dangling reference to unknown node {getattr(edge, end)!r}")
        out.edges.append(EdgeRow(edge.id, i, edge.fromNode, edge.toNode, edge.fromEnd, edge.toEnd, edge.label, edge_raw))
    return out


def memberships(nodes: list[NodeRow]) -> list[tuple[str, str]]:
    """(group_id, node_id) pairs: a node belongs to every group whose rectangle fully contains its own.

    Edges are inclusive; partial overlap is not membership; groups nest (an outer group lists the
    inner group and everything inside it); two groups with identical rectangles do not contain each other.
    """
    groups = [n for n in nodes if n.node_type == "group"]
    pairs: list[tuple[str, str]] = []
    for g in groups:
        gx2, gy2 = g.x + g.width, g.y + g.height
        for n in nodes:
            if n is g:
                continue
            if not (g.x <= n.x and g.y <= n.y and n.x + n.width <= gx2 and n.y + n.height <= gy2):
                continue
            if n.node_type == "group" and (n.x, n.y, n.width, n.height) == (g.x, g.y, g.width, g.height):
                continue
            pairs.append((g.node_id, n.node_id))
    return pairs
