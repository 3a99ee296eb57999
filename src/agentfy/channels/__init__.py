"""Chat channels: Telegram and Discord webhooks and the web chat page, in front of the agent runtime.

A channel owns its platform: it verifies that a request really comes from the platform (a secret token, a
signature), finds the tenant and agent from the bot's binding (never from the request), builds the request
context with :mod:`agentfy.permissions.channels` (SCOPE vs ACTOR), hands one
:class:`agentfy.runtime.inbound.Inbound` to the runtime's ``MessageHandler`` and sends the reply back through
the platform's API.  ``docs/channels.md`` describes the bindings, the URLs and the identity rules.
"""
