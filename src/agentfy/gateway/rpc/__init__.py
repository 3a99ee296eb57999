"""The WebSocket protocol's parts: the wire format (:mod:`.protocol`), the methods (:mod:`.methods`) and the
agent-event broadcaster (:mod:`.broadcast`, with :mod:`.run_relay` for the run events other processes
hear).  The endpoint is ``agentfy.gateway.routes.ws``; the protocol is described in ``docs/websocket.md``."""
