"""A knowledge graph as a picture: inline SVG drawn on the server, with the same facts as a table beside it.

The layout is deterministic — the entities in the order given (the API's, by name) evenly round a circle,
the first at the top — so the same graph is the same picture on every load, and no script or front-end library
is needed.  Relations are straight lines with an arrowhead at the target and their name at the midpoint; a
relation of an entity to itself is left to the table (a loop would hide under its node).  Every name goes
through :func:`~agentfy.gateway.console.layout.esc`, and shown labels are shortened (the node's ``<title>``,
which a pointer or a screen reader gets, keeps the whole name).

The picture is ``role="img"`` with a title and a description saying how many nodes and lines it has; the
table (:func:`relations_table`) says the same in text, for screen readers and for graphs too dense to read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from agentfy.gateway.console.layout import esc, table

SIZE: Final = 640
NODE_RADIUS: Final = 9
LABEL_CHARS: Final = 24
#: At most this many entities are drawn (the table lists every one the page has).
MAX_NODES: Final = 60


def short(text: str, limit: int = LABEL_CHARS) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def positions(count: int) -> list[tuple[float, float]]:
    """Where ``count`` nodes go: evenly round a circle, clockwise from the top (one node: the centre)."""
    centre = SIZE / 2
    if count == 1:
        return [(centre, centre)]
    radius = SIZE / 2 - 110  # room for the labels outside the circle
    return [(round(centre + radius * math.sin(2 * math.pi * i / count), 1),
             round(centre - radius * math.cos(2 * math.pi * i / count), 1)) for i in range(count)]


def _node(entity: Mapping[str, Any], x: float, y: float) -> str:
    centre = SIZE / 2
    anchor = "middle" if abs(x - centre) < 1 else ("start" if x > centre else "end")
    if anchor == "middle":  # at the top or the bottom: the label above or below the node
        dx, dy = 0.0, (-NODE_RADIUS - 6.0 if y <= centre else NODE_RADIUS + 16.0)
    else:  # on a side: the label outwards, level with the node
        dx, dy = (NODE_RADIUS + 4.0 if anchor == "start" else -NODE_RADIUS - 4.0), 4.0
    name = str(entity["name"])
    return (f'<g class="node" data-entity="{esc(entity["id"])}"><title>{esc(name)} ({esc(entity["entity_type"])})'
            f'</title><circle cx="{x}" cy="{y}" r="{NODE_RADIUS}" fill="#0b5cad" stroke="#fff" stroke-width="2"/>'
            f'<text x="{round(x + dx, 1)}" y="{round(y + dy, 1)}" text-anchor="{anchor}" font-size="13" '
            f'fill="#1b1f24">{esc(short(name))}</text></g>')


def _edge(relation: Mapping[str, Any], start: tuple[float, float], end: tuple[float, float]) -> str:
    (x1, y1), (x2, y2) = start, end
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    # Stop at the target's rim, so the arrowhead is seen.
    tx, ty = round(x2 - (x2 - x1) * NODE_RADIUS / length, 1), round(y2 - (y2 - y1) * NODE_RADIUS / length, 1)
    mx, my = round((x1 + x2) / 2, 1), round((y1 + y2) / 2, 1)
    return (f'<g class="edge" data-relation="{esc(relation["id"])}"><line x1="{x1}" y1="{y1}" x2="{tx}" y2="{ty}" '
            'stroke="#57606a" stroke-width="1.5" marker-end="url(#arrow)"/>'
            f'<text x="{mx}" y="{my}" text-anchor="middle" font-size="11" fill="#57606a" '
            f'paint-order="stroke" stroke="#fff" stroke-width="3">{esc(short(str(relation["relation"]), 20))}'
            "</text></g>")


def graph_svg(entities: Sequence[Mapping[str, Any]], relations: Sequence[Mapping[str, Any]]) -> str:
    """The picture of ``entities`` (the API's entity objects) and the ``relations`` between those drawn."""
    drawn = list(entities[:MAX_NODES])
    where = dict(zip((str(e["id"]) for e in drawn), positions(len(drawn)), strict=True))
    edges = [r for r in relations if r["source_entity_id"] in where and r["target_entity_id"] in where
             and r["source_entity_id"] != r["target_entity_id"]]
    lines = "".join(_edge(r, where[r["source_entity_id"]], where[r["target_entity_id"]]) for r in edges)
    nodes = "".join(_node(e, *where[str(e["id"])]) for e in drawn)
    left_out = len(entities) - len(drawn)
    described = (f"{len(drawn)} entities drawn round a circle and {len(edges)} relations between them as "
                 "arrows from source to target" + (f"; {left_out} more entities are in the table only"
                                                     if left_out else "") + ".")
    return (f'<svg id="graph" role="img" aria-labelledby="graph-title graph-desc" viewBox="0 0 {SIZE} {SIZE}" '
            f'width="100%" style="max-width:{SIZE}px;height:auto" xmlns="http://www.w3.org/2000/svg">'
            '<title id="graph-title">Knowledge graph</title>'
            f'<desc id="graph-desc">{esc(described)}</desc>'
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
            'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#57606a"/></marker></defs>'
            f"{lines}{nodes}</svg>")


def relations_table(entities: Sequence[Mapping[str, Any]], relations: Sequence[Mapping[str, Any]]) -> str:
    """The relations in words — source, relation, target, by name (an entity not on this page: by ID)."""
    names = {str(e["id"]): str(e["name"]) for e in entities}

    def name(entity_id: str) -> str:
        return esc(names[entity_id]) if entity_id in names else f"<code>{esc(entity_id)}</code>"

    rows = ([name(r["source_entity_id"]), esc(r["relation"]), name(r["target_entity_id"])] for r in relations)
    return table(("Source", "Relation", "Target"), rows, table_id="relations", empty="No relations.")
