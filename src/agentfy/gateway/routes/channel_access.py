"""``/v1/agents/{agent}/channel-access``: who may talk to the agent through its bots (admin).

The agent's DM policy (``open``, ``allowlist``, ``pairing``) and group policy (``mention``, ``all``), its
allowlist of platform senders (a platform and the sender's numeric user ID), its pending pairings, and the
approval of a pairing code, which allows the sender who was given it (``docs/channels.md``;
:mod:`agentfy.store.repos.channel_access` holds the rules).  Another organization's agent is 404, as always.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Response
from pydantic import Field

from agentfy.gateway.deps import Authenticated
from agentfy.gateway.resolve import agent_in
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas import Strict
from agentfy.gateway.routing import ApiRoute
from agentfy.store.repos import channel_access
from agentfy.store.repos.channel_access import ChannelPolicy, DmPolicy, GroupPolicy, Sender

router = APIRouter(tags=["channels"], route_class=ApiRoute)
PlatformPath = Annotated[Literal["telegram", "discord"], Path(description="telegram or discord")]
SenderPath = Annotated[str, Path(description="The sender's numeric user ID on the platform.", max_length=20,
                                 pattern=r"^[0-9]{1,20}$")]


class PolicyIn(Strict):
    dm_policy: DmPolicy | None = Field(default=None, description="Who may message the bot directly: open "
                                       "(anyone), allowlist (allowed senders only), pairing (unknown senders "
                                       "get a code for an admin to approve). Omitted: unchanged.")
    group_policy: GroupPolicy | None = Field(default=None, description="Which group messages reach the agent: "
                                             "mention (a mention of the bot or a reply to it) or all. Omitted: "
                                             "unchanged.")


class PolicyOut(Strict):
    dm_policy: str
    group_policy: str


class SenderIn(Strict):
    platform: Literal["telegram", "discord"]
    sender_id: str = Field(max_length=20, pattern=r"^[0-9]{1,20}$",
                           description="The sender's numeric user ID (Telegram user ID, Discord user snowflake).")


class SenderOut(Strict):
    platform: str
    sender_id: str
    status: str = Field(description="allowed, or pending (a pairing code was sent and awaits approval).")
    expires_at: str | None = Field(description="A pending pairing's code stops working then.")
    created_at: str
    approved_at: str | None


class ApproveIn(Strict):
    code: str = Field(min_length=1, max_length=20, pattern=channel_access.CODE_PATTERN,
                      description="The pairing code the sender was given (any case; a dash between its halves "
                                  "is ignored).")


def policy_out(policy: ChannelPolicy) -> PolicyOut:
    return PolicyOut(dm_policy=policy.dm_policy, group_policy=policy.group_policy)


def sender_out(sender: Sender) -> SenderOut:
    return SenderOut(platform=sender.platform, sender_id=sender.sender_id, status=sender.status,
                     expires_at=sender.expires_at, created_at=sender.created_at, approved_at=sender.approved_at)


@router.get("/agents/{agent}/channel-access", operation_id="channels.access.get", response_model=PolicyOut)
def get_policy(agent: AgentRef, call: Authenticated) -> PolicyOut:
    """The agent's DM and group policy (``open`` and ``mention`` until one is set)."""
    with call.gateway.db.transaction(write=False) as tx:
        return policy_out(channel_access.get_policy(tx, call.who.scope, agent_in(tx, call.who, agent).id))


@router.put("/agents/{agent}/channel-access", operation_id="channels.access.set", response_model=PolicyOut)
def set_policy(agent: AgentRef, body: PolicyIn, call: Authenticated) -> PolicyOut:
    """Set the agent's DM policy, group policy or both; an omitted one keeps its value.  An unknown value is
    422 naming the field."""
    with call.gateway.db.transaction() as tx:
        return policy_out(channel_access.set_policy(tx, call.who.scope, agent_in(tx, call.who, agent).id,
                                                    dm_policy=body.dm_policy, group_policy=body.group_policy))


@router.get("/agents/{agent}/channel-access/allowlist", operation_id="channels.allowlist.list",
            response_model=list[SenderOut])
def list_allowed(agent: AgentRef, call: Authenticated) -> list[SenderOut]:
    """The senders allowed to message the agent directly, by platform and the time they were allowed."""
    with call.gateway.db.transaction(write=False) as tx:
        found = channel_access.senders(tx, call.who.scope, agent_in(tx, call.who, agent).id, "allowed")
    return [sender_out(s) for s in found]


@router.post("/agents/{agent}/channel-access/allowlist", operation_id="channels.allowlist.add",
             response_model=SenderOut)
def add_allowed(agent: AgentRef, body: SenderIn, call: Authenticated) -> SenderOut:
    """Allow a sender (idempotent; a pending pairing of the sender is allowed with it, its code spent)."""
    with call.gateway.db.transaction() as tx:
        return sender_out(channel_access.allow(tx, call.who.scope, agent_in(tx, call.who, agent).id,
                                               body.platform, body.sender_id))


@router.delete("/agents/{agent}/channel-access/allowlist/{platform}/{sender_id}",
               operation_id="channels.allowlist.remove", status_code=204, response_class=Response)
def remove_allowed(agent: AgentRef, platform: PlatformPath, sender_id: SenderPath, call: Authenticated) -> Response:
    """Take a sender off the allowlist: its next direct message is refused (or paired again); 404 if it is
    not on it."""
    with call.gateway.db.transaction() as tx:
        channel_access.remove(tx, call.who.scope, agent_in(tx, call.who, agent).id, platform, sender_id)
    return Response(status_code=204)


@router.get("/agents/{agent}/channel-access/pairings", operation_id="channels.pairings.list",
            response_model=list[SenderOut])
def list_pairings(agent: AgentRef, call: Authenticated) -> list[SenderOut]:
    """The senders given a pairing code that no one approved yet (expired ones too: see ``expires_at``)."""
    with call.gateway.db.transaction(write=False) as tx:
        found = channel_access.senders(tx, call.who.scope, agent_in(tx, call.who, agent).id, "pending")
    return [sender_out(s) for s in found]


@router.post("/agents/{agent}/channel-access/pairings/approve", operation_id="channels.pairings.approve",
             response_model=SenderOut)
def approve_pairing(agent: AgentRef, body: ApproveIn, call: Authenticated) -> SenderOut:
    """Allow the sender who was given ``code``.  A code the agent never gave is 404; one already used, or
    expired, is 409 saying which; a code that cannot be one is 422."""
    with call.gateway.db.transaction() as tx:
        return sender_out(channel_access.approve(tx, call.who.scope, agent_in(tx, call.who, agent).id, body.code))
