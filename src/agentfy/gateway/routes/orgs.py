"""Organizations: ``/v1/orgs`` (platform administration) and ``/v1/org`` (the caller's own organization).

A platform-admin key creates, lists and deletes organizations.  Every other route acts on the organization
of the caller's key, which no request can choose: there is no tenant in any path, body, query or header.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi import APIRouter, Response

from agentfy.errors import ApiError
from agentfy.gateway.auth import Principal
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.pages import Cursor, Limit, Page, paged
from agentfy.gateway.resolve import agent_in
from agentfy.gateway.routes.schemas_admin import (
    AcceptedOut,
    ApiKeyIdPath,
    ApiKeyIn,
    ApiKeyOut,
    DefaultAgentIn,
    InvitationIdPath,
    InvitationOut,
    InvitedOut,
    IssuedApiKeyOut,
    MemberIn,
    MemberOut,
    MemberPatch,
    OrgCreated,
    OrgIdPath,
    OrgIn,
    OrgOut,
    UserIdPath,
    UserOut,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.identity import Scope, parse_id
from agentfy.identity.roles import role_rank
from agentfy.store.errors import NotFoundError
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import api_keys, invitations, orgs
from agentfy.store.repos.api_keys import ApiKey, IssuedApiKey
from agentfy.store.repos.invitations import Invitation
from agentfy.store.repos.orgs import Member, Organization

router = APIRouter(tags=["organizations"], route_class=ApiRoute)


def org_out(org: Organization) -> OrgOut:
    return OrgOut(id=org.id, slug=org.slug, name=org.name, default_agent_id=org.default_agent_id,
                  settings=org.settings, created_at=org.created_at)


def key_out(key: ApiKey) -> ApiKeyOut:
    return ApiKeyOut(id=key.id, name=key.name, role=key.role, user_id=key.user_id,
                     platform_admin=key.platform_admin, key_prefix=key.key_prefix, created_at=key.created_at,
                     revoked_at=key.revoked_at, expires_at=key.expires_at)


def issued_out(issued: IssuedApiKey) -> IssuedApiKeyOut:
    return IssuedApiKeyOut(api_key=key_out(issued.record), key=issued.key)


def invitation_out(invitation: Invitation) -> InvitationOut:
    return InvitationOut(id=invitation.id, tenant_id=invitation.tenant_id, user_id=invitation.user_id,
                         role=invitation.role, status=invitation.status, created_at=invitation.created_at,
                         expires_at=invitation.expires_at, org_slug=invitation.org_slug,
                         org_name=invitation.org_name)


def member_out(member: Member) -> MemberOut:
    return MemberOut(id=member.id, user_id=member.user_id, role=member.role)


def _require_outranked(who: Principal, role: str, action: str) -> None:
    """A caller may not hand out, or take away, a role above its own."""
    if role_rank(role) > role_rank(who.role):
        raise ApiError(403, "forbidden", f"a {who.role} key cannot {action} a member with the {role} role")


# -- platform administration ----------------------------------------------------------------------------------
@router.post("/orgs", operation_id="orgs.create", status_code=201, response_model=OrgCreated)
def create_organization(body: OrgIn, call: Authenticated) -> OrgCreated:
    """Create an organization (platform admin) with an owner API key, returned this once.

    With ``owner``, the person is created as the organization's owner and the key acts as them.
    A taken slug is 409."""
    with call.gateway.db.transaction() as tx:
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


@router.get("/orgs", operation_id="orgs.list", response_model=Page[OrgOut])
def list_organizations(call: Authenticated,
                       limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[OrgOut]:
    """Every organization, by slug, a page at a time (platform admin)."""
    return paged(call.gateway, call.who, "orgs.list", orgs.ORG_PAGES, fetch=orgs.list_organizations, out=org_out,
                 limit=limit, cursor=cursor)


@router.delete("/orgs/{org_id}", operation_id="orgs.delete", status_code=204, response_class=Response)
def delete_organization(org_id: OrgIdPath, call: Authenticated) -> Response:
    """Delete an organization and everything it owns (platform admin).  The platform organization itself
    cannot be deleted (409)."""
    org_id = parse_id(org_id, "org")
    if org_id == orgs.PLATFORM_ORG_ID:
        raise ApiError(409, "conflict", "the platform organization cannot be deleted", field="org_id",
                       value=org_id)
    with call.gateway.db.transaction() as tx:
        orgs.delete_organization(tx, org_id)  # the change feed drops the tenant from every process's caches
    return Response(status_code=204)


# -- the caller's organization ----------------------------------------------------------------------------------
@router.get("/org", operation_id="org.get", response_model=OrgOut)
def get_organization(call: Authenticated) -> OrgOut:
    """The caller's own organization."""
    with call.gateway.db.transaction(write=False) as tx:
        return org_out(orgs.get_organization(tx, call.who.scope))


@router.put("/org/default-agent", operation_id="org.default_agent.set", response_model=OrgOut)
def set_default_agent(body: DefaultAgentIn, call: Authenticated) -> OrgOut:
    """Make an agent (by ID or agent_key) the organization's default, or clear it with null (admin)."""
    with call.gateway.db.transaction() as tx:
        agent_id = None if body.agent is None else agent_in(tx, call.who, body.agent).id
        orgs.set_default_agent(tx, call.who.scope, agent_id)
        return org_out(orgs.get_organization(tx, call.who.scope))


@router.post("/org/members", operation_id="org.members.add", status_code=201, response_model=MemberOut | InvitedOut,
             responses={202: {"model": InvitedOut, "description": "An existing person was invited; they become "
                                                                  "a member when they accept."}})
def add_member(body: MemberIn, call: Authenticated, response: Response) -> MemberOut | InvitedOut:
    """Add a new person as a member (``display_name``, ``email``: 201), or invite an existing one (``user_id``:
    202 with the invitation; they join only by accepting with a credential of their own).

    Admin or higher; no key can hand out a role above its own (403).  The invitation answer is the same
    whether or not the ID names anybody, so it tells nothing about other organizations' people; a person who
    is already a member here, or already invited, is 409."""
    if (body.user_id is None) == (body.display_name is None):
        raise ApiError(422, "invalid_input", "give either user_id (an existing person, invited) or display_name "
                       "(a new person)", field="user_id")
    _require_outranked(call.who, body.role, "hand out")
    with call.gateway.db.transaction() as tx:
        if body.user_id is not None:
            invitation = invitations.invite(tx, call.who.scope, body.user_id, body.role, invited_by=call.who.user_id)
            response.status_code = 202
            return InvitedOut(invitation=invitation_out(invitation))
        user_id = orgs.create_user(tx, display_name=body.display_name or "", email=body.email).id
        return member_out(orgs.add_member(tx, call.who.scope, user_id, body.role))


@router.get("/org/members", operation_id="org.members.list", response_model=Page[MemberOut])
def list_members(call: Authenticated,
                 limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[MemberOut]:
    """The organization's members and their roles, a page at a time."""
    return paged(call.gateway, call.who, "org.members.list", orgs.MEMBER_PAGES,
                 fetch=lambda tx, **page: orgs.list_members(tx, call.who.scope, **page),
                 out=member_out, limit=limit, cursor=cursor)


@router.patch("/org/members/{user_id}", operation_id="org.members.update", response_model=MemberOut)
def update_member(user_id: UserIdPath, body: MemberPatch, call: Authenticated) -> MemberOut:
    """Change a member's role (admin or higher; neither the member's role nor the new one may be above the
    key's: 403).  A demotion narrows every key acting as them at once; the last owner cannot be demoted
    (409).  Not a member: 404."""
    _require_outranked(call.who, body.role, "hand out")
    with call.gateway.db.transaction() as tx:
        role = orgs.member_role(tx, call.who.scope, user_id)
        if role is None:
            raise NotFoundError("member", user_id)
        _require_outranked(call.who, role, "change")
        return member_out(orgs.set_member_role(tx, call.who.scope, user_id, body.role))


@router.delete("/org/members/{user_id}", operation_id="org.members.remove", status_code=204,
               response_class=Response)
def remove_member(user_id: UserIdPath, call: Authenticated) -> Response:
    """Remove a member (admin; a member whose role outranks the key's: 403); every key acting as them is
    revoked at once.  The last owner cannot leave (409).  Not a member: 404."""
    with call.gateway.db.transaction() as tx:
        role = orgs.member_role(tx, call.who.scope, user_id)
        if role is None:
            raise NotFoundError("member", user_id)
        _require_outranked(call.who, role, "remove")
        orgs.remove_member(tx, call.who.scope, user_id)
    return Response(status_code=204)


# -- invitations ----------------------------------------------------------------------------------------------
@router.get("/org/invitations", operation_id="org.invitations.list", response_model=Page[InvitationOut])
def list_org_invitations(call: Authenticated,
                         limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[InvitationOut]:
    """The organization's invitations waiting for an answer, a page at a time (admin)."""
    return paged(call.gateway, call.who, "org.invitations.list", invitations.OF_ORG_PAGES, fetch=lambda tx, **page:
                 invitations.pending_of_org(tx, call.who.scope, **page), out=invitation_out, limit=limit, cursor=cursor)


@router.delete("/org/invitations/{invitation_id}", operation_id="org.invitations.revoke", status_code=204,
               response_class=Response)
def withdraw_invitation(invitation_id: InvitationIdPath, call: Authenticated) -> Response:
    """Withdraw a pending invitation (admin).  Not pending, or another organization's: 404."""
    with call.gateway.db.transaction() as tx:
        invitations.withdraw(tx, call.who.scope, invitation_id)
    return Response(status_code=204)


def _invited_person(who: Principal) -> str:
    assert who.user_id is not None  # the access policy: invitations.* need a key that acts as a person
    return who.user_id


@router.get("/invitations", operation_id="invitations.list", response_model=Page[InvitationOut])
def list_my_invitations(call: Authenticated,
                        limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[InvitationOut]:
    """Invitations waiting for the answer of the person the key acts as, from any organization, a page at a
    time."""
    person = _invited_person(call.who)
    return paged(call.gateway, call.who, "invitations.list", invitations.FOR_USER_PAGES, fetch=lambda tx, **page:
                 invitations.pending_for_user(tx, person, **page), out=invitation_out, limit=limit, cursor=cursor)


@router.post("/invitations/{invitation_id}/accept", operation_id="invitations.accept", response_model=AcceptedOut)
def accept_invitation(invitation_id: InvitationIdPath, call: Authenticated) -> AcceptedOut:
    """Accept an invitation addressed to the person the key acts as: they become a member of the inviting
    organization (its owner can then issue keys acting as them).  Anybody else's, answered or expired: 404."""
    person = _invited_person(call.who)
    with call.gateway.db.transaction() as tx:
        organization, member = invitations.accept(tx, invitation_id, person)
    return AcceptedOut(organization_id=organization, member=member_out(member))


@router.post("/invitations/{invitation_id}/decline", operation_id="invitations.decline", status_code=204,
             response_class=Response)
def decline_invitation(invitation_id: InvitationIdPath, call: Authenticated) -> Response:
    """Decline an invitation addressed to the person the key acts as.  Anybody else's: 404."""
    person = _invited_person(call.who)
    with call.gateway.db.transaction() as tx:
        invitations.decline(tx, invitation_id, person)
    return Response(status_code=204)


# -- API keys -----------------------------------------------------------------------------------------------
@router.post("/org/api-keys", operation_id="org.api_keys.create", status_code=201, response_model=IssuedApiKeyOut)
def create_api_key(body: ApiKeyIn, call: Authenticated) -> IssuedApiKeyOut:
    """Issue an API key of the organization (owner, with an API key: never a signed context); the plaintext is
    in this response only.

    With ``user_id`` the key acts as that member, and its role cannot exceed the member's (422); a user who
    is not a member of this organization is 404.  ``expires_in_days`` ends it."""
    expires_at = None if body.expires_in_days is None else \
        (datetime.now(UTC).replace(tzinfo=None) + timedelta(days=body.expires_in_days)).isoformat(
            timespec="microseconds") + "Z"
    with call.gateway.db.transaction() as tx:
        if body.user_id is not None:
            member_role = orgs.member_role(tx, call.who.scope, body.user_id)
            if member_role is None:
                raise NotFoundError("user", body.user_id)
            if role_rank(body.role) > role_rank(member_role):
                raise ApiError(422, "invalid_input", f"the key's role {body.role!r} is above the member's role "
                               f"{member_role!r}", field="role", value=body.role)
        issued = api_keys.create_api_key(tx, call.who.scope, name=body.name, role=body.role, user_id=body.user_id,
                                         expires_at=expires_at)
    return issued_out(issued)


@router.get("/org/api-keys", operation_id="org.api_keys.list", response_model=Page[ApiKeyOut])
def list_api_keys(call: Authenticated,
                  limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[ApiKeyOut]:
    """The organization's API keys, revoked ones included, oldest first, a page at a time (owner).  Never the keys
    themselves."""
    return paged(call.gateway, call.who, "org.api_keys.list", api_keys.PAGES,
                 fetch=lambda tx, **page: api_keys.list_api_keys(tx, call.who.scope, **page),
                 out=key_out, limit=limit, cursor=cursor)


@router.delete("/org/api-keys/{key_id}", operation_id="org.api_keys.revoke", status_code=204, response_class=Response)
def revoke_api_key(key_id: ApiKeyIdPath, call: Authenticated) -> Response:
    """Revoke an API key (owner); it and every context it signed stop working on the next request, in every
    process.  The organization's last live owner key and the platform's last platform-admin key cannot be
    revoked (409: issue another first).  Unknown or already revoked: 404."""
    key_id = parse_id(key_id, "api-key", field="key_id")
    with call.gateway.db.transaction() as tx:
        api_keys.revoke_api_key(tx, call.who.scope, key_id)
    return Response(status_code=204)
