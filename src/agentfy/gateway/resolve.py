"""THE resolver of every ``agent`` reference of the HTTP and WebSocket APIs: an agent ID or an ``agent_key``,
in the caller's organization, with one error contract.

Two entry points, one rule each:

* :func:`agent_in` — for **writes**.  Resolves inside the write's own transaction, from the database, never
  from a cache: another process may have renamed, re-used or deleted the key a moment ago, and a write on
  the agent a stale cache remembers (the old ``bot-a`` after a rename) is the failure the dual identity
  exists to prevent.  If the agent is gone, the write is a 404 and nothing is written.
* :func:`agent_loop` — for **reads**.  The router's cache first (kept fresh by the change feed), the store
  on a miss.

Errors name the field the value came from: another entity's ID (``team-…`` where an agent belongs) is 422
``invalid_id``; a value that is neither an ID nor a key is 422 ``invalid_agent_key``; a missing, deleted
or another organization's agent is the same 404.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from agentfy.agents.loop import AgentLoop
from agentfy.errors import ApiError
from agentfy.gateway.auth import Principal
from agentfy.identity import InvalidAgentKeyError, InvalidIdError
from agentfy.logs import bind_log_identity
from agentfy.store.db import Tx
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import agents
from agentfy.store.repos.agents import Agent

if TYPE_CHECKING:
    from agentfy.gateway.deps import GatewayState


def not_found(entity: str, ref: object, field: str) -> ApiError:
    """The contract's 404 (the same body for a missing row and another organization's), naming the field."""
    return ApiError(404, "not_found", f"{entity} not found", field=field,
                    value=ref if isinstance(ref, str) else None)


@contextmanager
def _naming(field: str) -> Iterator[None]:
    try:
        yield
    except InvalidIdError as error:
        raise InvalidIdError(error.value, "agent", field=field) from error
    except InvalidAgentKeyError as error:
        raise InvalidAgentKeyError(error.value, error.reason, field=field) from error
    except NotFoundError as error:
        raise not_found(error.entity, error.ref, field) from error


def agent_in(tx: Tx, who: Principal, ref: str, field: str = "agent") -> Agent:
    """The caller's agent named by ``ref``, read in ``tx`` (the transaction that is about to write)."""
    with _naming(field):
        agent = agents.resolve_agent(tx, who.scope, ref)
    bind_log_identity(agent_key=agent.agent_key, agent_id=agent.id)
    return agent


def agent_loop(gateway: GatewayState, who: Principal, ref: str, field: str = "agent") -> AgentLoop:
    """The caller's agent named by ``ref``, through the router's cache (reads only)."""
    context = who.context()
    with _naming(field):
        loop = gateway.router.get_cached(context, ref) or gateway.router.get(context, ref)
    bind_log_identity(agent_key=loop.agent.agent_key, agent_id=loop.agent.id)
    return loop
