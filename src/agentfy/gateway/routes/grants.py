"""Group-chat config grants: ``/v1/agents/{agent}/grants`` and ``/v1/grants/{grant_id}``.

A grant lets one sender (the ACTOR, never the group) change one kind of an agent's configuration in one
group or guild chat (the chat SCOPE).  Managing grants is an admin's job; who granted is the acting person.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from agentfy.gateway.deps import Authenticated
from agentfy.gateway.pages import Cursor, Limit, Page, paged
from agentfy.gateway.resolve import agent_in, agent_loop
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas_admin import (
    GrantIdPath,
    GrantIn,
    GrantOut,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import permissions
from agentfy.store.repos.permissions import ConfigGrant

router = APIRouter(tags=["grants"], route_class=ApiRoute)


def grant_out(grant: ConfigGrant) -> GrantOut:
    return GrantOut(id=grant.id, agent_id=grant.agent_id, chat_scope=grant.chat_scope,
                    config_type=grant.config_type, sender_id=grant.sender_id, allow=grant.allow,
                    granted_by=grant.granted_by, created_at=grant.created_at)


@router.post("/agents/{agent}/grants", operation_id="grants.set", status_code=201, response_model=GrantOut,
             responses={200: {"model": GrantOut, "description": "An existing grant was replaced."}})
def grant(agent: AgentRef, body: GrantIn, call: Authenticated, response: Response) -> GrantOut:
    """Allow (or explicitly deny, ``allow: false``) ``sender_id`` the ``config_type`` of the agent in the
    group chat ``chat_scope`` (admin).  Granting again replaces the grant (same ID, 200)."""
    with call.gateway.db.transaction() as tx:
        agent_id = agent_in(tx, call.who, agent).id
        existing = permissions.find_grant(tx, call.who.scope, agent_id, body.chat_scope, body.config_type,
                                          body.sender_id)
        granted = permissions.grant(tx, call.who.scope, agent_id, chat_scope=body.chat_scope,
                                    config_type=body.config_type, sender_id=body.sender_id, allow=body.allow,
                                    granted_by=call.who.context().actor_id)
    if existing is not None:
        response.status_code = 200
    return grant_out(granted)


@router.get("/agents/{agent}/grants", operation_id="grants.list", response_model=Page[GrantOut])
def list_grants(agent: AgentRef, call: Authenticated,
                limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[GrantOut]:
    """The agent's grants, by chat scope, config type and sender, a page at a time."""
    agent_id = agent_loop(call.gateway, call.who, agent).agent.id
    return paged(call.gateway, call.who, "grants.list", permissions.PAGES,
                 fetch=lambda tx, **page: permissions.list_grants(tx, call.who.scope, agent_id, **page),
                 out=grant_out, limit=limit, cursor=cursor)


@router.delete("/grants/{grant_id}", operation_id="grants.delete", status_code=204, response_class=Response)
def delete_grant(grant_id: GrantIdPath, call: Authenticated) -> Response:
    """Remove a grant (admin); the default policy applies to the sender again."""
    with call.gateway.db.transaction() as tx:
        permissions.delete_grant(tx, call.who.scope, grant_id)
    return Response(status_code=204)
