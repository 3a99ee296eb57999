"""The platforms' webhooks, and the dependencies that verify them: the one deliberate exception to "every
``/v1`` route authenticates an API key".

A platform cannot send an API key; it proves itself another way (Telegram a secret token in a header,
Discord an Ed25519 signature of the body).  :mod:`agentfy.gateway.routes.mount` mounts
:data:`CHANNEL_ROUTERS` apart from the API's routers, and refuses a route in them that does not depend on
one of :data:`VERIFIERS` (each finds the binding — and so the tenant — from the path and verifies the
request against it, or answers 401 before anything else happens).  They are left out of the OpenAPI document:
no API client calls them.  The gateway's input limits (body size, JSON depth, the URL) apply to them like to
every route, with a smaller body limit (:data:`agentfy.gateway.limits.WEBHOOK_MAX_BYTES`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from fastapi import APIRouter

from agentfy.channels import discord_webhook, telegram_webhook

CHANNEL_ROUTERS: Final[tuple[APIRouter, ...]] = (telegram_webhook.router, discord_webhook.router)
VERIFIERS: Final[frozenset[Callable[..., Any]]] = frozenset({telegram_webhook.verify_telegram,
                                                             discord_webhook.verify_discord})
#: Every webhook's operation ID starts so (they are not operations of the access policy: no principal).
OPERATION_PREFIX: Final = "channels."
