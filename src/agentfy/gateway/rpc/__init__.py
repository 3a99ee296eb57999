"""The WebSocket protocol's parts: the wire format (:mod:`.protocol`), the methods (:mod:`.methods`) and the
in-process agent-event broadcaster (:mod:`.broadcast`).  The endpoint is ``agentfy.gateway.routes.ws``;
the protocol is described in ``docs/websocket.md``."""
