"""Route dispatch that tries only the routes a path can reach, with exactly the framework's outcome.

FastAPI's router finds a request's route by asking every mounted route in turn whether its regular expression
matches; an included router answers by asking each of its own routes, and asks them all again when it is
chosen.  With the ``/v1`` API's ~120 routes that scan was about a third of the gateway's own time on a cheap
request, whatever the route (see ``docs/benchmarks.md``).  Most of those routes cannot match: their path
starts with a literal text (``/v1/sessions/``, ``/v1/chat/completions``) the request's path does not.

:class:`IndexedDispatch` replaces the router's dispatch (its ``middleware_stack``, what the router calls for
every request).  From the routes, once, it builds an index of each route's *literal prefix* — the text its
regular expression must match at the start of the path before any parameter — by whole path segments, and
the routes with no parameter by their exact path.  For a request it walks the path's segments, takes the
routes whose prefix the path has (or whose exact path it is), in their original order, and hands only those
to FastAPI's own dispatch (``APIRouter.app`` on a view of the router holding just those routes; an included
router in the view holds just its own candidates).  Everything that decides the outcome is FastAPI's code:
the first full match wins; a path that matches with the wrong method is the first partial match (405 with
``Allow``); ``redirect_slashes`` (the candidates cover the path with and without its trailing slash); mounts
(the operator console), WebSocket routes, included routers' dependencies and limits, 404.

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
#: A character of the pattern after which the literal part ends (a group, a class, a repetition, the end).
_SPECIAL: Final = frozenset("()[]{}.*+?|^$")


@dataclass(frozen=True)
class PathKey:
    """Where a route can match: ``exact`` (the whole path is ``text``), ``prefix`` (the path starts with
    ``text``), or anywhere (``kind == "any"``)."""

    kind: str
    text: str = ""


ANYWHERE: Final = PathKey("any")


def literal_of(pattern: re.Pattern[str]) -> PathKey:
    """The :class:`PathKey` of a route's compiled path pattern: its literal text from ``^`` up to the first
    special character, ``exact`` if the pattern ends there; :data:`ANYWHERE` for a pattern with flags (a host)
    or not anchored at ``^/``."""
    source = pattern.pattern
    if pattern.flags & ~re.UNICODE or not source.startswith("^/"):
        return ANYWHERE
    text: list[str] = []
    position = 1
    while position < len(source):
        character = source[position]
        if character == "\\":
            if position + 1 >= len(source) or source[position + 1].isalnum():
                break  # \d, \w, …: a class, not an escaped character
            text.append(source[position + 1])
            position += 2
            continue
        if character in _SPECIAL:
            if character == "$" and position == len(source) - 1:
                return PathKey("exact", "".join(text))
            break
        text.append(character)
        position += 1
    return PathKey("prefix", "".join(text))


def key_of(route: Any) -> PathKey:
    """The key of a route as the router asks it (a route, or an included router's effective route)."""
    original = getattr(route, "original_route", None)
    if original is not None:  # an included router's effective route
        starlette_route = route.starlette_route
        if starlette_route is not None:
            return key_of(starlette_route)
        if type(original).matches is APIRoute.matches and route.path_regex is not None:
            return literal_of(route.path_regex)
        return ANYWHERE
    if type(route).matches in _REGEX_MATCHERS and isinstance(getattr(route, "path_regex", None), re.Pattern):
        return literal_of(route.path_regex)
    return ANYWHERE


@dataclass(eq=False)
class _Node:
    """A whole-segment prefix (``/v1/agents/``): the routes registered here and what its paths reach."""

    children: dict[str, _Node] = field(default_factory=dict)
    here: list[tuple[int, int]] = field(default_factory=list)
    #: Every candidate of a path reaching this node: this node's and its ancestors', as a sorted tuple.
    reached: tuple[tuple[int, int], ...] = ()


Leaf = tuple[int, int]
"""A route's place: (its position in the router, its position in its included router or -1)."""


class RouteIndex:
    """The index of one state of a router's routes (see the module docstring)."""

    def __init__(self, router: APIRouter) -> None:
        self.router = router
        self.root = _Node()
        self.exact: dict[str, list[Leaf]] = {}
        self.anywhere: list[Leaf] = []
        self.included: dict[int, tuple[_IncludedRouter, list[Any], int | None]] = {}
        self.versions = _versions(router)
        self.views: dict[tuple[Any, ...], APIRouter] = {}
        #: Low-priority (frontend) routes are chosen among all routes by specificity: no index then.
        self.linear_only = any(True for _ in router._iter_low_priority_routes())
        for position, route in enumerate(router.routes):
            if isinstance(route, _IncludedRouter):
                candidates = route.effective_candidates()
                self.included[position] = (route, candidates, route._effective_candidates_version)
                for inner, candidate in enumerate(candidates):
                    self._add((position, inner), ANYWHERE if isinstance(candidate, _IncludedRouter)
                              else key_of(candidate))
            else:
                self._add((position, -1), key_of(route))
        self._settle(self.root, ())

    def _add(self, leaf: Leaf, key: PathKey) -> None:
        if key.kind == "exact":
            self.exact.setdefault(key.text, []).append(leaf)
        elif key.kind == "prefix":
            node = self.root  # the node of "/": every literal starts with it
            for segment in key.text.split("/")[1:-1]:  # whole segments only: "/v1/ag" registers at "/v1/"
                node = node.children.setdefault(segment, _Node())
            node.here.append(leaf)
        else:
            self.anywhere.append(leaf)

    def _settle(self, node: _Node, above: tuple[Leaf, ...]) -> None:
        node.reached = tuple(sorted((*above, *node.here)))
        for child in node.children.values():
            self._settle(child, node.reached)

    def fresh(self) -> bool:
        """Whether no router's routes changed since the index was built."""
        return all(router._routes_version == version and len(router.routes) == length
                   for router, version, length in self.versions)

    def _node_of(self, path: str) -> _Node | None:
        """The deepest node whose prefix ``path`` has (``None``: the path does not start with ``/``)."""
        if not path.startswith("/"):
            return None
        node = self.root
        for segment in path.split("/")[1:-1]:
            child = node.children.get(segment)
            if child is None:
                break
            node = child
        return node

    def view(self, scope: Scope) -> APIRouter:
        """The router holding only the routes that can match the request's path (or, for ``redirect_slashes``,
        the path with its trailing slash added or removed), in their order."""
        path = get_route_path(scope)
        twin = None
        if scope["type"] == "http" and self.router.redirect_slashes and path != "/":
            twin_path = scope["path"].rstrip("/") if path.endswith("/") else scope["path"] + "/"
            twin = get_route_path({"path": twin_path, "root_path": scope.get("root_path", "")})
        key = (self._node_of(path), path if path in self.exact else None,
               None if twin is None else self._node_of(twin), twin if twin in self.exact else None)
        view = self.views.get(key)
        if view is None:
            view = self.views[key] = self._make_view(key)
        return view

    def _make_view(self, key: tuple[Any, ...]) -> APIRouter:
        node, exact, twin_node, twin_exact = key
        leaves: set[Leaf] = set(self.anywhere)
        for reached in (node, twin_node):
            if reached is not None:
                leaves.update(reached.reached)
        for text in (exact, twin_exact):
            if text is not None:
                leaves.update(self.exact[text])
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

    def candidates(self, scope: Scope) -> list[BaseRoute]:
        """The routes a request is matched against (for tests and diagnostics)."""
        index = self.index()
        return list(self.router.routes) if index is None else list(index.view(scope).routes)

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
