"""Channel bindings: which agent of which tenant a Telegram bot or a Discord application is.

A binding is written by an organization's admin (tenant-scoped, like every write) and read by a platform's
webhook, which knows nothing but the address in its URL (the bot's username, the application's ID).  That
read, :func:`find_binding`, is the one look-up in this package that takes no tenant scope, on purpose: it
is how the tenant is *found*.  It is safe because an address is unique per platform across all tenants (the
primary key), so it names at most one tenant, and because the caller must then prove it is the platform
(the secret token, the signature) against the ``verifier`` of that one row before anything else happens.

The bot token is encrypted with the organization-credentials cipher (AES-256-GCM, the tenant's ID as
associated data: a ciphertext copied into another tenant's row does not decrypt) and kept in the row, so it
goes with the binding, the agent and the organization when they are deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import sqlalchemy as sa

from agentfy.identity import AgentId, OrgId, Scope, parse_id
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, UniqueViolation
from agentfy.store.inputs import check_text
from agentfy.store.repos import agents as agent_rows
from agentfy.store.repos.credentials import CredentialCipher, CredentialDecryptionError
from agentfy.store.schema import agents, channel_bindings
from agentfy.store.sql import insert

Platform = Literal["telegram", "discord"]
PLATFORMS: Final[tuple[Platform, ...]] = ("telegram", "discord")
ADDRESS_MAX_LENGTH: Final = 100
VERIFIER_MAX_LENGTH: Final = 200
TOKEN_MAX_BYTES: Final = 4096

_COLUMNS: Final = (channel_bindings.c.platform, channel_bindings.c.address, channel_bindings.c.name,
                   channel_bindings.c.tenant_id, channel_bindings.c.agent_id, agents.c.agent_key,
                   channel_bindings.c.verifier, channel_bindings.c.created_at, channel_bindings.c.updated_at)
_JOINED: Final = channel_bindings.join(agents, agents.c.id == channel_bindings.c.agent_id)
_BY_ADDRESS: Final = sa.select(*_COLUMNS).select_from(_JOINED).where(
    channel_bindings.c.platform == sa.bindparam("platform"), channel_bindings.c.address == sa.bindparam("address"),
    agents.c.deleted_at.is_(None))
_OF_AGENT: Final = sa.select(*_COLUMNS).select_from(_JOINED).where(
    channel_bindings.c.tenant_id == sa.bindparam("tenant_id"), channel_bindings.c.agent_id == sa.bindparam("agent_id"),
).order_by(channel_bindings.c.platform)
_OWNER_OF_ADDRESS: Final = sa.select(channel_bindings.c.tenant_id, channel_bindings.c.agent_id).where(
    channel_bindings.c.platform == sa.bindparam("platform"), channel_bindings.c.address == sa.bindparam("address"))
_TOKEN: Final = sa.select(channel_bindings.c.token_nonce, channel_bindings.c.token_ciphertext).where(
    channel_bindings.c.platform == sa.bindparam("platform"), channel_bindings.c.address == sa.bindparam("address"),
    channel_bindings.c.tenant_id == sa.bindparam("tenant_id"))
_INSERT: Final = insert(channel_bindings, ["platform", "address", "tenant_id", "agent_id", "name", "verifier",
                                           "token_nonce", "token_ciphertext", "created_at", "updated_at"])
_DELETE_OF_AGENT: Final = sa.delete(channel_bindings).where(
    channel_bindings.c.tenant_id == sa.bindparam("tenant_id"), channel_bindings.c.agent_id == sa.bindparam("agent_id"),
    channel_bindings.c.platform == sa.bindparam("platform"))


@dataclass(frozen=True, slots=True)
class ChannelBinding:
    """One binding, with the agent's current key (a rename is seen at once: the key is read, not stored)."""

    platform: Platform
    address: str
    name: str
    tenant_id: OrgId
    agent_id: AgentId
    agent_key: str
    verifier: str
    created_at: str
    updated_at: str

    @property
    def scope(self) -> Scope:
        return Scope(self.tenant_id)


def _binding(row: tuple[object, ...]) -> ChannelBinding:
    platform, address, name, tenant_id, agent_id, agent_key, verifier, created, updated = (str(v) for v in row)
    assert platform in PLATFORMS
    return ChannelBinding(platform, address, name, OrgId(tenant_id),
                          AgentId(agent_id), agent_key, verifier, created, updated)


def find_binding(tx: Tx, platform: Platform, address: str) -> ChannelBinding | None:
    """The binding of ``address`` on ``platform`` in whichever tenant has it, or ``None`` (also when its agent
    is archived).  Unscoped on purpose: see the module docstring; the caller verifies the request against
    ``verifier`` before it uses anything else of the row."""
    row = tx.one(_BY_ADDRESS, {"platform": platform, "address": address})
    return None if row is None else _binding(row)


def bindings_of_agent(tx: Tx, scope: Scope, agent_id: str) -> list[ChannelBinding]:
    """The agent's bindings (at most one per platform), by platform."""
    agent_id = parse_id(agent_id, "agent", field="agent_id")
    return [_binding(row) for row in tx.all(_OF_AGENT, {"tenant_id": scope.tenant_id, "agent_id": agent_id})]


def bind(tx: Tx, scope: Scope, cipher: CredentialCipher, agent_id: str, platform: Platform, *, address: str,
         name: str, verifier: str, token: bytes | None) -> tuple[ChannelBinding, bool]:
    """Bind ``address`` on ``platform`` to the agent, replacing the agent's binding on that platform (if any);
    ``(binding, created)``.  ``address`` is the platform's identity of the bot, already in its canonical
    form (validated by the channel); another agent's or another tenant's address is :class:`ConflictError`,
    naming nothing of the other holder."""
    agent_id = agent_rows.get_agent(tx, scope, agent_id).id  # the scope's agent, or NotFoundError
    address = check_text(address, "address", max_length=ADDRESS_MAX_LENGTH)
    name = check_text(name, "name", max_length=ADDRESS_MAX_LENGTH)
    verifier = check_text(verifier, "verifier", max_length=VERIFIER_MAX_LENGTH)
    holder = tx.one(_OWNER_OF_ADDRESS, {"platform": platform, "address": address})
    if holder is not None and (holder[0], holder[1]) != (scope.tenant_id, agent_id):
        raise ConflictError(f"{platform} {name!r} is already bound to another agent; unbind it there first",
                            field="address", value=name)
    if token is not None and len(token) > TOKEN_MAX_BYTES:
        raise InvalidInputError(f"the bot token is {len(token)} bytes; at most {TOKEN_MAX_BYTES} are allowed",
                                field="bot_token", value=None)
    nonce, ciphertext = (None, None) if token is None else cipher.encrypt(scope.tenant_id, token)
    replaced = tx.execute(_DELETE_OF_AGENT, {"tenant_id": scope.tenant_id, "agent_id": agent_id,
                                             "platform": platform}).rowcount
    stamp = now()
    try:
        tx.execute(_INSERT, {"platform": platform, "address": address, "tenant_id": scope.tenant_id,
                             "agent_id": agent_id, "name": name, "verifier": verifier, "token_nonce": nonce,
                             "token_ciphertext": ciphertext, "created_at": stamp, "updated_at": stamp})
    except UniqueViolation:
        raise ConflictError(f"{platform} {name!r} was bound by another transaction at the same time; retry",
                            field="address", value=name) from None
    (found,) = (b for b in bindings_of_agent(tx, scope, agent_id) if b.platform == platform)
    return found, replaced == 0


def bot_token(tx: Tx, cipher: CredentialCipher, binding: ChannelBinding) -> str | None:
    """The binding's bot token (``None`` if it has none), decrypted for the binding's own tenant."""
    row = tx.one(_TOKEN, {"platform": binding.platform, "address": binding.address,
                          "tenant_id": binding.tenant_id})
    if row is None or row[0] is None or row[1] is None:
        return None
    try:
        return cipher.decrypt(binding.tenant_id, bytes(row[0]), bytes(row[1])).decode("utf-8")
    except CredentialDecryptionError as error:
        raise CredentialDecryptionError(f"the bot token of {binding.platform} {binding.name!r}: {error}") from None


def unbind(tx: Tx, scope: Scope, agent_id: str, platform: Platform) -> None:
    """Remove the agent's binding on ``platform``; :class:`NotFoundError` if it has none."""
    agent_id = parse_id(agent_id, "agent", field="agent_id")
    if tx.execute(_DELETE_OF_AGENT, {"tenant_id": scope.tenant_id, "agent_id": agent_id,
                                     "platform": platform}).rowcount == 0:
        raise NotFoundError("channel binding", platform, field="platform")
