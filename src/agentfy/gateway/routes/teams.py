"""``/v1/teams``: teams, their members (agents by ID or agent_key) and their API keys.

Teams have an ID only.  Agents are named by ID or agent_key and resolved through the router's cache; an
agent or team of another organization is "not found", exactly like a missing one.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from agentfy.gateway.deps import Authenticated
from agentfy.gateway.pages import Cursor, Limit, Page, paged
from agentfy.gateway.resolve import agent_in
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas_admin import (
    IssuedTeamApiKeyOut,
    LeadIn,
    TeamApiKeyIdPath,
    TeamApiKeyIn,
    TeamApiKeyOut,
    TeamIdPath,
    TeamIn,
    TeamMemberIn,
    TeamMemberOut,
    TeamOut,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.identity import parse_id
from agentfy.store.db import Tx
from agentfy.store.errors import NotFoundError
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import agents, teams
from agentfy.store.repos.teams import Team, TeamApiKey, TeamMember

router = APIRouter(tags=["teams"], route_class=ApiRoute)


def team_out(team: Team) -> TeamOut:
    return TeamOut(id=team.id, tenant_id=team.tenant_id, name=team.name, lead_agent_id=team.lead_agent_id,
                   created_at=team.created_at)


def member_out(member: TeamMember, agent_key: str | None) -> TeamMemberOut:
    return TeamMemberOut(id=member.id, team_id=member.team_id, agent_id=member.agent_id, agent_key=agent_key,
                         role=member.role, created_at=member.created_at)


def team_key_out(key: TeamApiKey) -> TeamApiKeyOut:
    return TeamApiKeyOut(id=key.id, team_id=key.team_id, name=key.name, key_prefix=key.key_prefix,
                         created_at=key.created_at, revoked_at=key.revoked_at)


# -- teams --------------------------------------------------------------------------------------------------
@router.post("/teams", operation_id="teams.create", status_code=201, response_model=TeamOut)
def create_team(body: TeamIn, call: Authenticated) -> TeamOut:
    """Create a team (operator), optionally led by an agent named by ID or agent_key (``lead``)."""
    with call.gateway.db.transaction() as tx:
        lead = None if body.lead is None else agent_in(tx, call.who, body.lead, field="lead").id
        return team_out(teams.create_team(tx, call.who.scope, name=body.name, lead_agent_id=lead))


@router.get("/teams", operation_id="teams.list", response_model=Page[TeamOut])
def list_teams(call: Authenticated,
               limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[TeamOut]:
    """The organization's teams, by name, a page at a time."""
    return paged(call.gateway, call.who, "teams.list", teams.TEAM_PAGES, fetch=lambda tx, **page: teams.list_teams(
        tx, call.who.scope, **page), out=team_out, limit=limit, cursor=cursor)


@router.get("/teams/{team_id}", operation_id="teams.get", response_model=TeamOut)
def get_team(team_id: TeamIdPath, call: Authenticated) -> TeamOut:
    """One team.  Another organization's team: 404, like a missing one."""
    with call.gateway.db.transaction(write=False) as tx:
        return team_out(teams.get_team(tx, call.who.scope, team_id))


@router.delete("/teams/{team_id}", operation_id="teams.delete", status_code=204, response_class=Response)
def delete_team(team_id: TeamIdPath, call: Authenticated) -> Response:
    """Delete a team with its members, tasks and API keys (admin); its agents stay."""
    with call.gateway.db.transaction() as tx:
        teams.delete_team(tx, call.who.scope, team_id)
    return Response(status_code=204)


@router.put("/teams/{team_id}/lead", operation_id="teams.lead.set", response_model=TeamOut)
def set_team_lead(team_id: TeamIdPath, body: LeadIn, call: Authenticated) -> TeamOut:
    """Make an agent (by ID or agent_key) the team's lead, or remove the lead with null (operator)."""
    with call.gateway.db.transaction() as tx:
        lead = None if body.agent is None else agent_in(tx, call.who, body.agent).id
        return team_out(teams.set_lead(tx, call.who.scope, team_id, lead))


# -- members ----------------------------------------------------------------------------------------------
@router.post("/teams/{team_id}/members", operation_id="teams.members.add",
             status_code=201, response_model=TeamMemberOut)
def add_team_member(team_id: TeamIdPath, body: TeamMemberIn, call: Authenticated) -> TeamMemberOut:
    """Add an agent, by ID or agent_key, to the team (operator).  Already a member: 409."""
    with call.gateway.db.transaction() as tx:
        agent = agent_in(tx, call.who, body.agent)
        member = teams.add_member(tx, call.who.scope, team_id, agent.id, role=body.role)
    return member_out(member, agent.agent_key)


@router.get("/teams/{team_id}/members", operation_id="teams.members.list", response_model=Page[TeamMemberOut])
def list_team_members(team_id: TeamIdPath, call: Authenticated,
                      limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[TeamMemberOut]:
    """The team's members (both identities of each agent), in the order they joined, a page at a time."""
    keys: dict[str, str] = {}

    def fetch(tx: Tx, **page: Any) -> list[TeamMember]:
        members = teams.list_members(tx, call.who.scope, team_id, **page)
        keys.update(agents.keys_of(tx, call.who.scope, [m.agent_id for m in members]))
        return members

    return paged(call.gateway, call.who, "teams.members.list", teams.MEMBER_PAGES, fetch=fetch,
                 out=lambda member: member_out(member, keys.get(member.agent_id)), limit=limit, cursor=cursor)


@router.delete("/teams/{team_id}/members/{agent}", operation_id="teams.members.remove",
               status_code=204, response_class=Response)
def remove_team_member(team_id: TeamIdPath, agent: AgentRef, call: Authenticated) -> Response:
    """Remove an agent, by ID or agent_key, from the team (operator).  Not a member: 404."""
    with call.gateway.db.transaction() as tx:
        teams.remove_member(tx, call.who.scope, team_id, agent_in(tx, call.who, agent).id)
    return Response(status_code=204)


# -- API keys ---------------------------------------------------------------------------------------------
@router.post("/teams/{team_id}/api-keys", operation_id="teams.api_keys.create",
             status_code=201, response_model=IssuedTeamApiKeyOut)
def create_team_api_key(team_id: TeamIdPath, body: TeamApiKeyIn, call: Authenticated) -> IssuedTeamApiKeyOut:
    """Issue an API key for the team (owner): it acts in this organization with the member role.  The
    plaintext is in this response only."""
    with call.gateway.db.transaction() as tx:
        issued = teams.create_team_api_key(tx, call.who.scope, team_id, name=body.name)
    return IssuedTeamApiKeyOut(api_key=team_key_out(issued.api_key), key=issued.key)


@router.get("/teams/{team_id}/api-keys", operation_id="teams.api_keys.list", response_model=Page[TeamApiKeyOut])
def list_team_api_keys(team_id: TeamIdPath, call: Authenticated,
                       limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[TeamApiKeyOut]:
    """The team's API keys, revoked ones included, a page at a time (owner).  Never the keys themselves."""
    return paged(call.gateway, call.who, "teams.api_keys.list", teams.KEY_PAGES, fetch=lambda tx, **page:
                 teams.list_team_api_keys(tx, call.who.scope, team_id, **page), out=team_key_out, limit=limit,
                 cursor=cursor)


@router.delete("/teams/{team_id}/api-keys/{key_id}", operation_id="teams.api_keys.revoke",
               status_code=204, response_class=Response)
def revoke_team_api_key(team_id: TeamIdPath, key_id: TeamApiKeyIdPath, call: Authenticated) -> Response:
    """Revoke one of the team's API keys (owner); it stops working on the next request.  A key of another
    team: 404."""
    key_id = parse_id(key_id, "team-api-key", field="key_id")
    with call.gateway.db.transaction() as tx:
        if not any(key.id == key_id for key in teams.list_team_api_keys(tx, call.who.scope, team_id)):
            raise NotFoundError("team API key", key_id)
        teams.revoke_team_api_key(tx, call.who.scope, key_id)
    return Response(status_code=204)
