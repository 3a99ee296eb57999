"""Route dispatch that tries only the routes a path can reach, with exactly the framework's outcome.

FastAPI's router finds a request's route by asking every mounted route in turn whether its regular expression
matches; an included router answers by asking each of its own routes, and asks them all again when it is
chosen.  With the ``/v1`` API's ~120 routes that scan was about a third of the gateway's own time on a cheap
request, whatever the route (see ``docs/benchmarks.md``).  Most of those routes cannot match: their path
starts with a literal text (``/v1/sessions/``, ``/v1/chat/completions``) the request's path does not.

:class:`IndexedDispatch` replaces the router's dispatch (its ``middleware_stack``, what the router calls for
every request).  From the routes, once, it builds a tree of each route's *shape*: the path segments its
regular expression requires, each a literal text (``v1``, ``agents``) or one ``str`` parameter (any
non-empty segment), read from the start of the pattern up to anything else (a ``path`` or ``int``
parameter, text beside a parameter), and whether the path must end there.  For a request it walks the path's
segments down the tree, takes the routes of the nodes it passes (routes that need more segments) and ends at
(routes that need exactly these), in their original order, and hands only those to FastAPI's own dispatch
(``APIRouter.app`` on a view of the router holding just those routes; an included router in the view holds
just its own candidates).  ``GET /v1/agents/{id}/messages`` is tried against one route instead of ~120.
Everything that decides the outcome is FastAPI's code: the first full match wins; a path that matches with
the wrong method is the first partial match (405 with ``Allow``); ``redirect_slashes`` (the candidates cover
the path with and without its trailing slash); mounts (the operator console), WebSocket routes, included
routers' dependencies and limits, 404.  Views are cached by the nodes reached (finitely many).

The contract: a route left out is one that cannot match the path nor its slash-toggled twin, so the outcome
is the one a linear scan gives, for every path — the equivalence test drives the real application with both
dispatches (every route's paths, wrong methods, trailing slashes, unknown and hostile paths) and compares
the route chosen and the answer.  What the index cannot see through it never leaves out: a route of another
kind (a host route, a route class with its own ``matches``, a nested included router) is a candidate for
every path.  The index is rebuilt when any router's routes change (FastAPI's own routes version, and the
lists' lengths); when a router has low-priority (frontend) routes, whose choice spans all routes, dispatch
stays linear.

It relies on FastAPI's included-router internals (``_IncludedRouter``), as the pin in ``pyproject.toml`` says.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, Final

from fastapi import FastAPI
from fastapi.routing import APIRoute, APIRouter, APIWebSocketRoute, _IncludedRouter
from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.types import Receive, Scope, Send

#: The ``matches`` methods whose only test of the path is the route's regular expression from its start.
_REGEX_MATCHERS: Final = frozenset({Route.matches, WebSocketRoute.matches, Mount.matches, APIRoute.matches,
                                    APIWebSocketRoute.matches})
#: A path parameter of the default (``str``) convertor: one whole, non-empty segment.
_SEGMENT_PARAMETER: Final = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>\[\^/\]\+\)")
#: A character of the pattern after which the literal part ends (a group, a class, a repetition, the end).
_SPECIAL: Final = frozenset("()[]{}.*+?|^$")
#: A segment that is one ``str`` parameter: any non-empty text without ``/``.
ANY_SEGMENT: Final = None


@dataclass(frozen=True)
class Shape:
    """What a path must look like for a route's pattern to match it, split at ``/``: ``segments`` are the
    path's first segments, each a literal text or :data:`ANY_SEGMENT`; ``exact``: the path has exactly these
    segments, else it has at least one more (the pattern goes on with something this does not read, which
    it then tests itself).  ``segments is None``: the route may match any path."""

    segments: tuple[str | None, ...] | None
    exact: bool = False


ANYWHERE: Final = Shape(None)


def shape_of(pattern: re.Pattern[str]) -> Shape:
    """The :class:`Shape` of a route's compiled path pattern (``^/`` then literal text and ``str`` parameters,
    read up to the first thing that is neither); :data:`ANYWHERE` for a pattern with flags (a host) or not
    anchored at ``^/``."""
    source = pattern.pattern
    if pattern.flags & ~re.UNICODE or not source.startswith("^/"):
        return ANYWHERE
    done: list[str | None] = []
    text: list[str] = []
    parameter = False  # the current segment is a str parameter (and nothing else may join it)
    position = 2
    while position < len(source):
        character = source[position]
        if character == "/":
            done.append(ANY_SEGMENT if parameter else "".join(text))
            text, parameter = [], False
            position += 1
            continue
        if character == "$" and position == len(source) - 1:
            done.append(ANY_SEGMENT if parameter else "".join(text))
            return Shape(tuple(done), exact=True)
        parameter_match = _SEGMENT_PARAMETER.match(source, position)
        if parameter_match is not None and not text and not parameter:
            parameter = True
            position = parameter_match.end()
            continue
        if parameter:
            break  # text after a parameter in one segment: stop reading
        if character == "\\" and position + 1 < len(source) and not source[position + 1].isalnum():
            text.append(source[position + 1])  # an escaped character (\d, \w, … are classes)
            position += 2
            continue
        if character in _SPECIAL or character == "\\":
            break
        text.append(character)
        position += 1
    return Shape(tuple(done))  # the segments read whole; the path goes on past them


def shape_of_route(route: Any) -> Shape:
    """The shape of a route as the router asks it (a route, or an included router's effective route)."""
    original = getattr(route, "original_route", None)
    if original is not None:  # an included router's effective route
        starlette_route = route.starlette_route
        if starlette_route is not None:
            return shape_of_route(starlette_route)
        if type(original).matches is APIRoute.matches and isinstance(route.path_regex, re.Pattern):
            return shape_of(route.path_regex)
        return ANYWHERE
    if type(route).matches in _REGEX_MATCHERS and isinstance(getattr(route, "path_regex", None), re.Pattern):
        return shape_of(route.path_regex)
    return ANYWHERE


Leaf = tuple[int, int]
"""A route's place: (its position in the router, its position in its included router or -1)."""


@dataclass(eq=False)
class _Node:
    """The paths whose first segments are this node's: routes that need more segments (``onward``) and
    routes that need exactly these (``ending``)."""

    literal: dict[str, _Node] = field(default_factory=dict)
    any_segment: _Node | None = None
    onward: list[Leaf] = field(default_factory=list)
    ending: list[Leaf] = field(default_factory=list)


class RouteIndex:
    """The index of one state of a router's routes (see the module docstring)."""

    def __init__(self, router: APIRouter) -> None:
        self.router = router
        self.root = _Node()
        self.anywhere: list[Leaf] = []
        #: The nodes' route lists by ``id``, what a view's key names (the index holds them: the ids stay theirs).
        self._lists: dict[int, list[Leaf]] = {}
        self.included: dict[int, tuple[_IncludedRouter, list[Any], int | None]] = {}
        self.versions = _versions(router)
        self.views: dict[tuple[int, ...], APIRouter] = {}
        #: Low-priority (frontend) routes are chosen among all routes by specificity: no index then.
        self.linear_only = any(True for _ in router._iter_low_priority_routes())
        for position, route in enumerate(router.routes):
            if isinstance(route, _IncludedRouter):
                candidates = route.effective_candidates()
                self.included[position] = (route, candidates, route._effective_candidates_version)
                for inner, candidate in enumerate(candidates):
                    self._add((position, inner), ANYWHERE if isinstance(candidate, _IncludedRouter)
                              else shape_of_route(candidate))
            else:
                self._add((position, -1), shape_of_route(route))

    def _add(self, leaf: Leaf, shape: Shape) -> None:
        if shape.segments is None:
            self.anywhere.append(leaf)
            return
        node = self.root
        for segment in shape.segments:
            if segment is ANY_SEGMENT:
                if node.any_segment is None:
                    node.any_segment = _Node()
                node = node.any_segment
            else:
                node = node.literal.setdefault(segment, _Node())
        leaves = node.ending if shape.exact else node.onward
        leaves.append(leaf)
        self._lists[id(leaves)] = leaves

    def fresh(self) -> bool:
        """Whether no router's routes changed since the index was built."""
        for router, version, length in self.versions:
            if router._routes_version != version or len(router.routes) != length:
                return False
        return True

    def _reached(self, path: str) -> tuple[int, ...]:
        """The nodes whose routes can match ``path`` (as ``id``s of their lists, in the order visited): the
        ``onward`` lists of the nodes the path goes past, the ``ending`` lists of those it ends at."""
        if not path.startswith("/"):
            return ()
        reached: list[list[Leaf]] = []
        nodes = [self.root]
        for segment in path[1:].split("/"):
            following: list[_Node] = []
            for node in nodes:
                if node.onward:
                    reached.append(node.onward)
                child = node.literal.get(segment)
                if child is not None:
                    following.append(child)
                if segment and node.any_segment is not None:
                    following.append(node.any_segment)
            nodes = following
            if not nodes:
                break
        reached.extend(node.ending for node in nodes if node.ending)
        return tuple(id(leaves) for leaves in reached)

    def view(self, scope: Scope) -> APIRouter:
        """The router holding only the routes that can match the request's path (or, for ``redirect_slashes``,
        the path with its trailing slash added or removed), in their order."""
        path = get_route_path(scope)
        key = self._reached(path)
        if scope["type"] == "http" and self.router.redirect_slashes and path != "/":
            twin = scope["path"].rstrip("/") if path.endswith("/") else scope["path"] + "/"
            key = (*key, 0, *self._reached(get_route_path({"path": twin, "root_path": scope.get("root_path", "")})))
        view = self.views.get(key)
        if view is None:
            view = self.views[key] = self._make_view(key)
        return view

    def _make_view(self, key: tuple[int, ...]) -> APIRouter:
        leaves: set[Leaf] = set(self.anywhere)
        for list_id in key:
            if list_id:
                leaves.update(self._lists[list_id])
        by_route: dict[int, list[int]] = {}
        for position, inner in sorted(leaves):
            by_route.setdefault(position, []).append(inner)
        routes: list[BaseRoute] = []
        for position, inners in by_route.items():
            if position in self.included:
                included, candidates, version = self.included[position]
                routes.append(_IncludedRouter(original_router=included.original_router,
                                              include_context=included.include_context,
                                              _effective_candidates=[candidates[inner] for inner in inners],
                                              _effective_candidates_version=version))
            else:
                routes.append(self.router.routes[position])
        view = copy.copy(self.router)
        view.routes = routes
        return view


def _versions(router: APIRouter) -> list[tuple[APIRouter, int, int]]:
    """Each router reachable from ``router`` through included routers, with its routes version and count."""
    seen: dict[int, tuple[APIRouter, int, int]] = {}
    pending: list[APIRouter] = [router]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen[id(current)] = (current, current._routes_version, len(current.routes))
        pending.extend(route.original_router for route in current.routes if isinstance(route, _IncludedRouter))
    return list(seen.values())


class IndexedDispatch:
    """The router's dispatch through :class:`RouteIndex` (see the module docstring); lifespan events and
    routers it cannot index go to the router's own dispatch."""

    def __init__(self, router: APIRouter) -> None:
        self.router = router
        self._index: RouteIndex | None = None

    def index(self) -> RouteIndex | None:
        """The index of the router's current routes, ``None`` when dispatch must stay linear."""
        index = self._index
        if index is None or not index.fresh():
            index = self._index = RouteIndex(self.router)
        return None if index.linear_only else index

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.router.app(scope, receive, send)
            return
        index = self.index()
        if index is None:
            await self.router.app(scope, receive, send)
            return
        if "router" not in scope:
            scope["router"] = self.router
        await APIRouter.app(index.view(scope), scope, receive, send)


def install(app: FastAPI) -> IndexedDispatch:
    """Dispatch ``app``'s requests through an :class:`IndexedDispatch`; returns it.  Refuses a router with
    middleware of its own (its stack is not the bare dispatch this replaces)."""
    router = app.router
    if router.middleware_stack != router.app:
        raise RuntimeError("the router has middleware of its own; IndexedDispatch replaces only a bare dispatch")
    dispatch = IndexedDispatch(router)
    router.middleware_stack = dispatch
    return dispatch


def linear(app: FastAPI) -> None:
    """Dispatch ``app``'s requests by FastAPI's own linear scan again (the reference the tests compare with)."""
    app.router.middleware_stack = app.router.app
