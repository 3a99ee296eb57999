"""Invitations: how an existing person joins another organization — only with their own consent.

People are global (one ``users`` row, member of any number of organizations).  If an organization could add
any person by ID, it could enrol another organization's people and then mint keys acting as them, and the
answer would tell it who exists.  So an existing person is *invited*: :func:`invite` stores an invitation for
any well-formed user ID — whether it names somebody or nobody, the same row and the same answer — and only
the invited person, with a credential that acts as them (:func:`accept`, :func:`decline`), turns it into a
membership.  An invitation for nobody simply expires.

The invited person's side (:func:`pending_for_user`, :func:`accept`, :func:`decline`) is the one place that
reads across organizations: deliberately, keyed by the person, never by a tenant the caller chose.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import OrgId, Scope, parse_id
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, NotFoundError, UniqueViolation
from agentfy.store.paging import Keyset
from agentfy.store.repos import orgs
from agentfy.store.repos._common import require_role
from agentfy.store.schema import org_invitations, organizations
from agentfy.store.sql import insert_returning_id

#: How long an invitation waits for an answer.
INVITATION_DAYS: Final = 7

_COLUMNS: Final = (org_invitations.c.id, org_invitations.c.tenant_id, org_invitations.c.user_id,
                   org_invitations.c.role, org_invitations.c.status, org_invitations.c.invited_by,
                   org_invitations.c.created_at, org_invitations.c.expires_at, org_invitations.c.responded_at)
_INSERT: Final = insert_returning_id(org_invitations, ["tenant_id", "user_id", "role", "status", "invited_by",
                                                       "created_at", "expires_at"])
_PENDING: Final = sa.and_(org_invitations.c.status == "pending", org_invitations.c.expires_at > sa.bindparam("now"))
_ORDER: Final = (org_invitations.c.created_at, org_invitations.c.id)
OF_ORG_PAGES: Final[Keyset[Invitation]] = Keyset(
    sa.select(*_COLUMNS).where(org_invitations.c.tenant_id == sa.bindparam("tenant_id"), _PENDING), _ORDER,
    lambda i: (i.created_at, i.id))
FOR_USER_PAGES: Final[Keyset[Invitation]] = Keyset(
    sa.select(*_COLUMNS, organizations.c.slug, organizations.c.name)
    .select_from(org_invitations.join(organizations, organizations.c.id == org_invitations.c.tenant_id))
    .where(org_invitations.c.user_id == sa.bindparam("user_id"), _PENDING), _ORDER, lambda i: (i.created_at, i.id))
_PENDING_FOR_USER_BY_ID: Final = sa.select(*_COLUMNS).where(org_invitations.c.id == sa.bindparam("id"),
                                                             org_invitations.c.user_id == sa.bindparam("user_id"),
                                                             _PENDING)
_RESPOND: Final = (sa.update(org_invitations).where(org_invitations.c.id == sa.bindparam("id"),
                                                    org_invitations.c.status == "pending")
                   .values(status=sa.bindparam("status"), responded_at=sa.bindparam("now")))
_WITHDRAW: Final = (sa.update(org_invitations).where(org_invitations.c.tenant_id == sa.bindparam("tenant_id"),
                                                     org_invitations.c.id == sa.bindparam("id"), _PENDING)
                    .values(status="withdrawn", responded_at=sa.bindparam("now")))
# Expired invitations leave the pending index, so the person can be invited again.
_EXPIRE_OLD: Final = (sa.update(org_invitations).where(org_invitations.c.tenant_id == sa.bindparam("tenant_id"),
                                                       org_invitations.c.user_id == sa.bindparam("user_id"),
                                                       org_invitations.c.status == "pending",
                                                       org_invitations.c.expires_at <= sa.bindparam("now"))
                      .values(status="withdrawn", responded_at=sa.bindparam("now")))


@dataclass(frozen=True, slots=True)
class Invitation:
    id: str
    tenant_id: OrgId
    user_id: str
    role: str
    status: str
    invited_by: str | None
    created_at: str
    expires_at: str
    responded_at: str | None
    org_slug: str | None = None  # filled for the invited person's view
    org_name: str | None = None


def _invitation(row: tuple[Any, ...]) -> Invitation:
    return Invitation(*row[:9], *(row[9:11] if len(row) > 9 else ()))


def _later(days: int) -> str:
    stamp = datetime.now(UTC).replace(tzinfo=None) + timedelta(days=days)
    return stamp.isoformat(timespec="microseconds") + "Z"


def invite(tx: Tx, scope: Scope, user_id: str, role: str, *, invited_by: str | None) -> Invitation:
    """Invite the person ``user_id`` to the scope's organization with ``role``.

    Never looks at whether ``user_id`` names anybody (see the module docstring).  A person who is already a
    member, or already has a pending invitation here, is a :class:`ConflictError` — facts about this
    organization only.
    """
    user_id = parse_id(user_id, "user", field="user_id")
    require_role(role)
    if orgs.member_role(tx, scope, user_id) is not None:
        raise ConflictError(f"user {user_id!r} is already a member", field="user_id", value=user_id)
    stamp = now()
    tx.execute(_EXPIRE_OLD, {"tenant_id": scope.tenant_id, "user_id": user_id, "now": stamp})
    values = {"tenant_id": scope.tenant_id, "user_id": user_id, "role": role, "status": "pending",
              "invited_by": invited_by, "created_at": stamp, "expires_at": _later(INVITATION_DAYS)}
    try:
        invitation_id = tx.insert_minted("org-invitation", _INSERT, values)
    except UniqueViolation:
        raise ConflictError(f"user {user_id!r} already has a pending invitation", field="user_id",
                            value=user_id) from None
    return Invitation(invitation_id, scope.tenant_id, user_id, role, "pending", invited_by, stamp,
                      str(values["expires_at"]), None)


def pending_of_org(tx: Tx, scope: Scope,
                   *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[Invitation]:
    """The organization's invitations still waiting for an answer (all, or a page)."""
    return OF_ORG_PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "now": now()}, _invitation, after=after,
                              limit=limit)


def withdraw(tx: Tx, scope: Scope, invitation_id: str) -> None:
    """Withdraw a pending invitation of the organization; anything else is :class:`NotFoundError`."""
    invitation_id = parse_id(invitation_id, "org-invitation", field="invitation_id")
    if tx.execute(_WITHDRAW, {"tenant_id": scope.tenant_id, "id": invitation_id, "now": now()}).rowcount == 0:
        raise NotFoundError("invitation", invitation_id)


def pending_for_user(tx: Tx, user_id: str,
                     *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[Invitation]:
    """The invitations waiting for ``user_id``'s answer, with the inviting organization's slug and name (all, or
    a page)."""
    user_id = parse_id(user_id, "user")
    return FOR_USER_PAGES.fetch(tx, {"user_id": user_id, "now": now()}, _invitation, after=after, limit=limit)


def _own_pending(tx: Tx, invitation_id: str, user_id: str) -> Invitation:
    invitation_id = parse_id(invitation_id, "org-invitation", field="invitation_id")
    row = tx.one(_PENDING_FOR_USER_BY_ID, {"id": invitation_id, "user_id": parse_id(user_id, "user"),
                                           "now": now()})
    if row is None:  # another person's, answered, expired, or none: the same answer
        raise NotFoundError("invitation", invitation_id)
    return _invitation(row)


def accept(tx: Tx, invitation_id: str, user_id: str) -> tuple[OrgId, orgs.Member]:
    """The invited person ``user_id`` accepts: they become a member of the inviting organization, whose ID is
    returned with the membership."""
    invitation = _own_pending(tx, invitation_id, user_id)
    tx.execute(_RESPOND, {"id": invitation.id, "status": "accepted", "now": now()})
    return invitation.tenant_id, orgs.add_member(tx, Scope(invitation.tenant_id), invitation.user_id,
                                                 invitation.role)


def decline(tx: Tx, invitation_id: str, user_id: str) -> None:
    """The invited person ``user_id`` declines."""
    invitation = _own_pending(tx, invitation_id, user_id)
    tx.execute(_RESPOND, {"id": invitation.id, "status": "declined", "now": now()})
