"""Organizations: ``/v1/orgs`` (platform administration) and ``/v1/org`` (the caller's own organization).

A platform-admin key creates, lists and deletes organizations.  Every other route acts on the organization
of the caller's key, which no request can choose: there is no tenant in any path, body, query or header.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from agentfy.gateway.app import Authenticated, Gateway
from agentfy.gateway.auth import ROLE_RANK, Principal
from agentfy.gateway.errors import ApiError
from agentfy.gateway.resolve import agent_in
from agentfy.gateway.routes.schemas_admin import (
    ApiKeyIdPath,
    ApiKeyIn,
    ApiKeyOut,
    DefaultAgentIn,
    IssuedApiKeyOut,
    MemberIn,
    MemberOut,
    OrgCreated,
    OrgIdPath,
    OrgIn,
    OrgOut,
    UserIdPath,
    UserOut,
)
from agentfy.identity import Scope, parse_id
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import api_keys, orgs
from agentfy.store.repos.api_keys import ApiKey, IssuedApiKey
from agentfy.store.repos.orgs import Member, Organization

router = APIRouter(tags=["organizations"])


def org_out(org: Organization) -> OrgOut:
    return OrgOut(id=org.id, slug=org.slug, name=org.name, default_agent_id=org.default_agent_id,
                  settings=org.settings, created_at=org.created_at)


def key_out(key: ApiKey) -> ApiKeyOut:
    return ApiKeyOut(id=key.id, name=key.name, role=key.role, user_id=key.user_id,
                     platform_admin=key.platform_admin, key_prefix=key.key_prefix, created_at=key.created_at,
                     revoked_at=key.revoked_at)


def issued_out(issued: IssuedApiKey) -> IssuedApiKeyOut:
    return IssuedApiKeyOut(api_key=key_out(issued.record), key=issued.key)


def member_out(member: Member) -> MemberOut:
    return MemberOut(id=member.id, user_id=member.user_id, role=member.role)


def _require_outranked(who: Principal, role: str, action: str) -> None:
    """A caller may not hand out, or take away, a role above its own."""
    if ROLE_RANK[role] > ROLE_RANK[who.role]:
        raise ApiError(403, "forbidden", f"a {who.role} key cannot {action} a member with the {role} role")


# -- platform administration ----------------------------------------------------------------------------------
@router.post("/orgs", status_code=201, response_model=OrgCreated)
def create_organization(body: OrgIn, who: Authenticated, gateway: Gateway) -> OrgCreated:
    """Create an organization (platform admin) with an owner API key, returned this once.

    With ``owner``, the person is created as the organization's owner and the key acts as them.
    A taken slug is 409."""
    who.require_platform_admin()
    with gateway.db.transaction() as tx:
        org = orgs.create_organization(tx, slug=body.slug, name=body.name, settings=body.settings)
        scope = Scope(org.id)
        owner = None
        if body.owner is not None:
            owner = orgs.create_user(tx, display_name=body.owner.display_name, email=body.owner.email)
            orgs.add_member(tx, scope, owner.id, "owner")
        issued = api_keys.create_api_key(tx, scope, name="owner", role="owner",
                                         user_id=None if owner is None else owner.id)
    owner_out = None if owner is None else UserOut(id=owner.id, email=owner.email, display_name=owner.display_name)
    return OrgCreated(organization=org_out(org), owner=owner_out, api_key=issued_out(issued))


@router.get("/orgs", response_model=list[OrgOut])
def list_organizations(who: Authenticated, gateway: Gateway) -> list[OrgOut]:
    """Every organization, by slug (platform admin)."""
    who.require_platform_admin()
    with gateway.db.transaction(write=False) as tx:
        return [org_out(org) for org in orgs.list_organizations(tx)]


@router.delete("/orgs/{org_id}", status_code=204, response_class=Response)
def delete_organization(org_id: OrgIdPath, who: Authenticated, gateway: Gateway) -> Response:
    """Delete an organization and everything it owns (platform admin).  The platform organization itself
    cannot be deleted (409)."""
    who.require_platform_admin()
    org_id = parse_id(org_id, "org")
    if org_id == orgs.PLATFORM_ORG_ID:
        raise ApiError(409, "conflict", "the platform organization cannot be deleted", field="org_id",
                       value=org_id)
    with gateway.db.transaction() as tx:
        orgs.delete_organization(tx, org_id)  # the change feed drops the tenant from every process's caches
    return Response(status_code=204)


# -- the caller's organization ----------------------------------------------------------------------------------
@router.get("/org", response_model=OrgOut)
def get_organization(who: Authenticated, gateway: Gateway) -> OrgOut:
    """The caller's own organization."""
    with gateway.db.transaction(write=False) as tx:
        return org_out(orgs.get_organization(tx, who.scope))


@router.put("/org/default-agent", response_model=OrgOut)
def set_default_agent(body: DefaultAgentIn, who: Authenticated, gateway: Gateway) -> OrgOut:
    """Make an agent (by ID or agent_key) the organization's default, or clear it with null (admin)."""
    who.require_role("admin")
    with gateway.db.transaction() as tx:
        agent_id = None if body.agent is None else agent_in(tx, who, body.agent).id
        orgs.set_default_agent(tx, who.scope, agent_id)
        return org_out(orgs.get_organization(tx, who.scope))


@router.post("/org/members", status_code=201, response_model=MemberOut)
def add_member(body: MemberIn, who: Authenticated, gateway: Gateway) -> MemberOut:
    """Add a member (admin): an existing user by ``user_id``, or a new user from ``display_name`` (and
    ``email``).  No key can grant a role above its own (403); a user already a member is 409."""
    who.require_role("admin")
    if (body.user_id is None) == (body.display_name is None):
        raise ApiError(422, "invalid_input", "give either user_id (an existing user) or display_name (a new one)",
                       field="user_id")
    _require_outranked(who, body.role, "add")
    with gateway.db.transaction() as tx:
        user_id = body.user_id
        if user_id is None:
            user_id = orgs.create_user(tx, display_name=body.display_name or "", email=body.email).id
        return member_out(orgs.add_member(tx, who.scope, user_id, body.role))


@router.get("/org/members", response_model=list[MemberOut])
def list_members(who: Authenticated, gateway: Gateway) -> list[MemberOut]:
    """The organization's members and their roles."""
    with gateway.db.transaction(write=False) as tx:
        return [member_out(member) for member in orgs.list_members(tx, who.scope)]


@router.delete("/org/members/{user_id}", status_code=204, response_class=Response)
def remove_member(user_id: UserIdPath, who: Authenticated, gateway: Gateway) -> Response:
    """Remove a member (admin; a member whose role outranks the key's: 403).  Not a member: 404."""
    who.require_role("admin")
    with gateway.db.transaction() as tx:
        role = orgs.member_role(tx, who.scope, user_id)
        if role is None:
            raise NotFoundError("member", user_id)
        _require_outranked(who, role, "remove")
        orgs.remove_member(tx, who.scope, user_id)
    return Response(status_code=204)


# -- API keys -----------------------------------------------------------------------------------------------
@router.post("/org/api-keys", status_code=201, response_model=IssuedApiKeyOut)
def create_api_key(body: ApiKeyIn, who: Authenticated, gateway: Gateway) -> IssuedApiKeyOut:
    """Issue an API key of the organization (owner); the plaintext is in this response only.

    With ``user_id`` the key acts as that member, and its role cannot exceed the member's (422); a user who
    is not a member is 404."""
    who.require_role("owner")
    with gateway.db.transaction() as tx:
        if body.user_id is not None:
            member_role = orgs.member_role(tx, who.scope, body.user_id)
            if member_role is None:
                raise NotFoundError("user", body.user_id)
            if ROLE_RANK[body.role] > ROLE_RANK[member_role]:
                raise ApiError(422, "invalid_input", f"the key's role {body.role!r} is above the member's role "
                               f"{member_role!r}", field="role", value=body.role)
        issued = api_keys.create_api_key(tx, who.scope, name=body.name, role=body.role, user_id=body.user_id)
    return issued_out(issued)


@router.get("/org/api-keys", response_model=list[ApiKeyOut])
def list_api_keys(who: Authenticated, gateway: Gateway) -> list[ApiKeyOut]:
    """The organization's API keys, revoked ones included (owner).  Never the keys themselves."""
    who.require_role("owner")
    with gateway.db.transaction(write=False) as tx:
        return [key_out(key) for key in api_keys.list_api_keys(tx, who.scope)]


@router.delete("/org/api-keys/{key_id}", status_code=204, response_class=Response)
def revoke_api_key(key_id: ApiKeyIdPath, who: Authenticated, gateway: Gateway) -> Response:
    """Revoke an API key (owner); it stops working on the next request.  Unknown or already revoked: 404."""
    who.require_role("owner")
    key_id = parse_id(key_id, "api-key", field="key_id")
    with gateway.db.transaction() as tx:
        api_keys.revoke_api_key(tx, who.scope, key_id)
    return Response(status_code=204)
