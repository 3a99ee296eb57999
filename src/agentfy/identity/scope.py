"""The tenant scope: which organization a piece of work belongs to.

Every repository call takes a ``Scope`` as a required argument; there is no default tenant and no
unscoped variant reachable from the API.  A ``Scope`` can only hold a valid organization ID, so a slug, an
``agent_key`` or an empty string cannot become a tenant by accident: the tenant is always an ID, never a slug
(a slug is for URLs and people, and can change).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentfy.identity.ids import OrgId, parse_id


@dataclass(frozen=True, slots=True)
class Scope:
    """The tenant of a request, event or job.  Construct it from a validated organization ID only."""

    tenant_id: OrgId

    def __post_init__(self) -> None:
        parse_id(self.tenant_id, "org", field="tenant_id")

    @classmethod
    def of(cls, tenant_id: object) -> Scope:
        """Parse ``tenant_id`` (refusing anything but an organization ID) into a scope."""
        return cls(parse_id(tenant_id, OrgId, field="tenant_id"))

    def __str__(self) -> str:
        return self.tenant_id
