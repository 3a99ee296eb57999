"""MCP servers' tools for the agents that registered them (docs/mcp.md).

* :mod:`~agentfy.runtime.mcp.settings` — the ``mcp`` settings (allowed stdio commands, timeouts);
* :mod:`~agentfy.runtime.mcp.servers` — what a server record may point at (registration and runs);
* :mod:`~agentfy.runtime.mcp.naming` — ``mcp__<server>__<tool>``, as the model APIs allow;
* :mod:`~agentfy.runtime.mcp.connections` — the process's pooled connections, reconnected after failure;
* :mod:`~agentfy.runtime.mcp.results` — a call's result as the model's text;
* :mod:`~agentfy.runtime.mcp.offer` — one run's tools (:class:`McpTools`), one server's status.

Nothing is imported here: the settings (:mod:`agentfy.settings`, read by every command) take
:mod:`~agentfy.runtime.mcp.settings` without loading the SDK.
"""
