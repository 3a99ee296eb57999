"""Organization policies: named JSON documents (tool allow-lists, model limits, retention rules).

One policy per (organization, name), under a minted ``org-policy`` ID.  The document is stored as JSON
text; interpreting it is the caller's business.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import OrgId, OrgPolicyId, Scope, parse_id
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, NotFoundError, UniqueViolation
from agentfy.store.inputs import check_text
from agentfy.store.repos._batch import check_json
from agentfy.store.repos._common import load_json
from agentfy.store.schema import org_policies
from agentfy.store.sql import insert_returning_id

NAME_MAX_LENGTH: Final = 200

_COLUMNS: Final = (org_policies.c.id, org_policies.c.org_id, org_policies.c.name, org_policies.c.document,
                   org_policies.c.created_at)
_IN_ORG: Final = org_policies.c.org_id == sa.bindparam("tenant_id")
_INSERT: Final = insert_returning_id(org_policies, ["org_id", "name", "document", "created_at"])
_BY_ID: Final = sa.select(*_COLUMNS).where(_IN_ORG, org_policies.c.id == sa.bindparam("id"))
_BY_NAME: Final = sa.select(*_COLUMNS).where(_IN_ORG, org_policies.c.name == sa.bindparam("name"))
_LIST: Final = sa.select(*_COLUMNS).where(_IN_ORG).order_by(org_policies.c.name)
_UPDATE: Final = (sa.update(org_policies).where(_IN_ORG, org_policies.c.id == sa.bindparam("id"))
                  .values(document=sa.bindparam("document")))
_DELETE: Final = sa.delete(org_policies).where(_IN_ORG, org_policies.c.id == sa.bindparam("id"))


@dataclass(frozen=True, slots=True)
class Policy:
    id: OrgPolicyId
    org_id: OrgId
    name: str
    document: dict[str, Any]
    created_at: str


def _policy(row: tuple[Any, ...]) -> Policy:
    return Policy(OrgPolicyId(row[0]), OrgId(row[1]), row[2], load_json(row[3]), row[4])


def create_policy(tx: Tx, scope: Scope, name: str, document: dict[str, Any]) -> Policy:
    """A new policy of the scope's organization; a name already used there is a :class:`ConflictError`."""
    name = check_text(name, "name", max_length=NAME_MAX_LENGTH)
    values: dict[str, Any] = {"org_id": scope.tenant_id, "name": name, "document": check_json(document, "document"),
                              "created_at": now()}
    try:
        policy_id = tx.insert_minted("org-policy", _INSERT, values)
    except UniqueViolation:
        raise ConflictError(f"policy name {name!r} is already used in organization {scope.tenant_id}",
                            field="name", value=name) from None
    return Policy(OrgPolicyId(policy_id), scope.tenant_id, name, dict(document or {}), values["created_at"])


def get_policy(tx: Tx, scope: Scope, policy_id: str) -> Policy:
    """The organization's policy with this ID, or :class:`NotFoundError` (another organization's too)."""
    policy_id = parse_id(policy_id, "org-policy", field="policy_id")
    row = tx.one(_BY_ID, {"tenant_id": scope.tenant_id, "id": policy_id})
    if row is None:
        raise NotFoundError("policy", policy_id)
    return _policy(row)


def get_policy_by_name(tx: Tx, scope: Scope, name: str) -> Policy:
    name = check_text(name, "name", max_length=NAME_MAX_LENGTH)
    row = tx.one(_BY_NAME, {"tenant_id": scope.tenant_id, "name": name})
    if row is None:
        raise NotFoundError("policy", name)
    return _policy(row)


def list_policies(tx: Tx, scope: Scope) -> list[Policy]:
    return [_policy(row) for row in tx.all(_LIST, {"tenant_id": scope.tenant_id})]


def update_policy(tx: Tx, scope: Scope, policy_id: str, document: dict[str, Any]) -> Policy:
    """Replace the policy's document (its ID and name stay)."""
    policy_id = parse_id(policy_id, "org-policy", field="policy_id")
    params = {"tenant_id": scope.tenant_id, "id": policy_id, "document": check_json(document, "document")}
    if tx.execute(_UPDATE, params).rowcount == 0:
        raise NotFoundError("policy", policy_id)
    return get_policy(tx, scope, policy_id)


def delete_policy(tx: Tx, scope: Scope, policy_id: str) -> None:
    policy_id = parse_id(policy_id, "org-policy", field="policy_id")
    if tx.execute(_DELETE, {"tenant_id": scope.tenant_id, "id": policy_id}).rowcount == 0:
        raise NotFoundError("policy", policy_id)
