"""``/v1/agents/{agent}/channels``: bind an agent to a Telegram bot or a Discord application (admin), list its
bindings, unbind.

A binding is what lets a platform's webhook reach the agent: the webhook names only the bot, and the binding
names the tenant and the agent (``docs/channels.md``).  Secrets never come back: the bot token is stored
encrypted, the Telegram secret token only as a SHA-256 — except a secret token the gateway generated, shown
once in the answer that created it, for ``setWebhook``.
"""

from __future__ import annotations

import secrets
from typing import Annotated, Final, Literal

from fastapi import APIRouter, Path, Request, Response
from pydantic import Field

from agentfy.channels import discord, telegram
from agentfy.channels.state import channels_of
from agentfy.channels.telegram_webhook import secret_digest
from agentfy.errors import ApiError
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.resolve import agent_in, agent_loop
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas import Strict, fullmatch_pattern
from agentfy.gateway.routing import ApiRoute
from agentfy.store.repos import channels as bindings
from agentfy.store.repos.channels import ChannelBinding

router = APIRouter(tags=["channels"], route_class=ApiRoute)
#: Bytes of randomness (OS CSPRNG) in a generated Telegram secret token: 43 URL-safe characters.
SECRET_TOKEN_BYTES: Final = 32
PlatformPath = Annotated[Literal["telegram", "discord"], Path(description="telegram or discord")]


class TelegramBindingIn(Strict):
    bot_username: str = Field(max_length=33, description="The bot's @username (the @ is optional).",
                              examples=["@SupportBot"],
                              json_schema_extra={"pattern": fullmatch_pattern(telegram.BOT_USERNAME, prefix="@?")})
    bot_token: str = Field(max_length=200, pattern=r"^[0-9]{1,20}:[A-Za-z0-9_-]{20,170}$",
                           description="The token @BotFather gave, for sendMessage (stored encrypted).")
    secret_token: str | None = Field(
        default=None, min_length=16, max_length=256, pattern=r"^[A-Za-z0-9_-]+$",
        description="The secret_token given to setWebhook; omitted: one is generated and shown once.")


class DiscordBindingIn(Strict):
    application_id: str = Field(max_length=20, description="The application's ID (a snowflake).",
                                json_schema_extra={"pattern": fullmatch_pattern(discord.APPLICATION_ID)})
    public_key: str = Field(max_length=64, description="The application's public key (hex), to verify "
                                                       "interactions.",
                            json_schema_extra={"pattern": fullmatch_pattern(discord.PUBLIC_KEY)})
    bot_token: str | None = Field(default=None, min_length=20, max_length=200, pattern=r"^[A-Za-z0-9_.-]+$",
                                  description="The bot's token (stored encrypted). Replies use each "
                                              "interaction's own token, so it is optional.")


class ChannelBindingOut(Strict):
    platform: str
    name: str = Field(description="The bot's username, or the Discord application ID.")
    agent_id: str
    agent_key: str
    webhook_path: str = Field(description="Where the platform must send its webhooks (under the gateway's URL).")
    created_at: str
    updated_at: str
    secret_token: str | None = Field(
        default=None, description="Only when the gateway generated it: give it to setWebhook now, it is not "
                                  "shown again.")


def webhook_path(binding: ChannelBinding) -> str:
    if binding.platform == "telegram":
        return f"/v1/channels/telegram/{binding.name}/webhook"
    return f"/v1/channels/discord/{binding.address}/interactions"


def binding_out(binding: ChannelBinding, *, secret_token: str | None = None) -> ChannelBindingOut:
    return ChannelBindingOut(platform=binding.platform, name=binding.name, agent_id=binding.agent_id,
                             agent_key=binding.agent_key, webhook_path=webhook_path(binding),
                             created_at=binding.created_at, updated_at=binding.updated_at, secret_token=secret_token)


@router.put("/agents/{agent}/channels/telegram", operation_id="channels.telegram.bind",
            response_model=ChannelBindingOut,
            responses={201: {"model": ChannelBindingOut, "description": "The agent had no Telegram bot."}})
def bind_telegram(agent: AgentRef, body: TelegramBindingIn, call: Authenticated, request: Request,
                  response: Response) -> ChannelBindingOut:
    """Make the bot ``bot_username`` this agent's (admin), replacing the agent's previous bot.  A bot bound to
    another agent (of any organization) is 409."""
    try:
        address, name = telegram.parse_bot_username(body.bot_username)
    except ValueError as error:
        raise ApiError(422, "invalid_input", str(error), field="bot_username", value=body.bot_username,
                       expected="a Telegram bot username such as @SupportBot") from None
    generated = secrets.token_urlsafe(SECRET_TOKEN_BYTES) if body.secret_token is None else None
    cipher = channels_of(request).cipher()
    with call.gateway.db.transaction() as tx:
        agent_id = agent_in(tx, call.who, agent).id
        binding, created = bindings.bind(tx, call.who.scope, cipher, agent_id, "telegram", address=address,
                                         name=name, verifier=secret_digest(body.secret_token or generated or ""),
                                         token=body.bot_token.encode("ascii"))
    response.status_code = 201 if created else 200
    return binding_out(binding, secret_token=generated)


@router.put("/agents/{agent}/channels/discord", operation_id="channels.discord.bind",
            response_model=ChannelBindingOut,
            responses={201: {"model": ChannelBindingOut, "description": "The agent had no Discord application."}})
def bind_discord(agent: AgentRef, body: DiscordBindingIn, call: Authenticated, request: Request,
                 response: Response) -> ChannelBindingOut:
    """Make the Discord application ``application_id`` this agent's (admin), replacing the agent's previous
    one.  An application bound to another agent (of any organization) is 409."""
    try:
        application = discord.parse_application_id(body.application_id)
    except ValueError as error:
        raise ApiError(422, "invalid_input", str(error), field="application_id", value=body.application_id,
                       expected="a snowflake: 17-20 digits") from None
    try:
        public_key = discord.parse_public_key(body.public_key)
    except ValueError as error:
        raise ApiError(422, "invalid_input", str(error), field="public_key", value=body.public_key,
                       expected="an Ed25519 public key: 64 hexadecimal characters") from None
    cipher = channels_of(request).cipher()
    with call.gateway.db.transaction() as tx:
        agent_id = agent_in(tx, call.who, agent).id
        binding, created = bindings.bind(tx, call.who.scope, cipher, agent_id, "discord", address=application,
                                         name=application, verifier=public_key,
                                         token=None if body.bot_token is None else body.bot_token.encode("ascii"))
    response.status_code = 201 if created else 200
    return binding_out(binding)


@router.get("/agents/{agent}/channels", operation_id="channels.list", response_model=list[ChannelBindingOut])
def list_bindings(agent: AgentRef, call: Authenticated) -> list[ChannelBindingOut]:
    """The agent's bots (at most one per platform), without their secrets."""
    agent_id = agent_loop(call.gateway, call.who, agent).agent.id
    with call.gateway.db.transaction(write=False) as tx:
        return [binding_out(b) for b in bindings.bindings_of_agent(tx, call.who.scope, agent_id)]


@router.delete("/agents/{agent}/channels/{platform}", operation_id="channels.unbind", status_code=204,
               response_class=Response)
def unbind(agent: AgentRef, platform: PlatformPath, call: Authenticated) -> Response:
    """Unbind the agent's bot on ``platform`` (admin): its webhooks are refused (401) from now on."""
    with call.gateway.db.transaction() as tx:
        bindings.unbind(tx, call.who.scope, agent_in(tx, call.who, agent).id, platform)
    return Response(status_code=204)
