"""Warm agent reads: ``GET /v1/agents/{agent}`` answered from the caches, in front of the FastAPI router.

The hottest request of the platform is reading an agent its caller just used.  When everything it needs is
already in memory — the caller's principal in the principal cache, the agent in the router's cache, and the
agent's rendered body — this ASGI middleware answers it at once, without routing, dependency solving,
a response model or a ``Response`` object: each of those cost more than the whole look-up (see
``docs/benchmarks.md``).  Anything else goes on to the application unchanged: a cold cache, a missing or
malformed credential, an operation the caller may not call, a query string, any other path or method.  The
middleware never answers with an error, so every error still comes from the one place that shapes errors.

What it answers is what the route would: the same access rule (``authorize(who, "agents.get")``, the one
policy), the same look-up (``Router.get_cached`` with the principal's tenant), the same bytes
(:func:`agentfy.gateway.agent_ops.rendered`), the same status and headers.  The route's tests and this
path's are the same tests: they compare a cold answer with a warm one byte for byte.

It sits inside :class:`agentfy.gateway.limits.InputLimits` (a NUL in the path is refused before it runs) and
inside whatever wraps the application for observability.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from starlette.types import ASGIApp, Receive, Scope, Send

from agentfy.errors import ApiError
from agentfy.gateway import agent_ops
from agentfy.gateway.auth import bearer
from agentfy.identity.context import set_for_task
from agentfy.logs import bind_log_identity
from agentfy.permissions.access import AccessDenied, authorize

if TYPE_CHECKING:
    from agentfy.gateway.deps import GatewayState

PREFIX: Final = "/v1/agents/"
OPERATION: Final = "agents.get"
#: The route template this path answers for (metrics and logs).
ROUTE: Final = "/v1/agents/{agent}"
_CONTENT_TYPE: Final = (b"content-type", b"application/json")


class WarmAgentReads:
    """The middleware (see the module docstring)."""

    def __init__(self, app: ASGIApp, gateway: GatewayState) -> None:
        self.app = app
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"].startswith(PREFIX) \
                and not scope["query_string"] and not scope.get("root_path"):
            body = self.cached_body(scope)
            if body is not None:
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"content-length", b"%d" % len(body)), _CONTENT_TYPE]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)

    def cached_body(self, scope: Scope) -> bytes | None:
        """The answer's body if every part of it is cached and the caller may have it, else ``None``."""
        reference = scope["path"][len(PREFIX):]
        if not reference or "/" in reference:
            return None
        header = next((value for name, value in scope["headers"] if name == b"authorization"), None)
        if header is None:
            return None
        gateway = self.gateway
        try:
            who = gateway.principals.get(bearer(header.decode("latin-1")))[0]
            if who is None:
                return None
            authorize(who, OPERATION)
        except (ApiError, AccessDenied):
            return None  # 401/403: the application answers, with its error body
        context = who.context()
        loop = gateway.router.get_cached(context, reference)
        if loop is None:
            return None
        # What the outer layer logs and counts this request as: the route it stands in for, its identity.
        scope["agentfy.route"] = ROUTE
        set_for_task(context)
        bind_log_identity(agent_key=loop.agent.agent_key, agent_id=loop.agent.id)
        return agent_ops.rendered(gateway, loop.agent)
