"""The live-events screen: its socket is the API's WebSocket as the signed-in key (subscribe answers the key's
tenant, events of that tenant only arrive), refused without a session or from another origin; on both engines."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from agentfy.store.db import Database
from agentfy.store.repos import agents
from tests.gateway.console.conftest import SignedIn
from tests.helpers.tenants import Tenant


def test_the_page_renders_with_its_filter(signed_in: SignedIn) -> None:
    page = signed_in("member").get("/console/events", params={"agent": "support"}).text
    assert '<label for="agent-filter">Filter by agent key</label>' in page and 'value="support"' in page
    assert "/console/static/events.js" in page and 'aria-current="page">Live events' in page


def test_the_socket_subscribes_as_the_key_and_gets_its_tenants_events_only(
        signed_in: SignedIn, db: Database, acme: Tenant, globex: Tenant) -> None:
    client = signed_in("member")
    with client.websocket_connect("/console/events/ws") as socket:
        socket.send_json({"id": 1, "method": "subscribe"})
        answer = socket.receive_json()
        assert answer["id"] == 1 and answer["result"]["subscribed"] is True
        assert answer["result"]["tenant_slug"] == "acme"
        with db.transaction() as tx:
            agents.create_agent(tx, globex.scope, agent_key="globex-secret")
            agents.create_agent(tx, acme.scope, agent_key="newcomer")
        event = socket.receive_json()
        assert event["event"] == "agent.created" and event["agent"]["agent_key"] == "newcomer"
        assert event["agent"]["tenant_slug"] == "acme"
        socket.send_json({"id": 2, "method": "agents.delete", "params": {"agent": "newcomer"}})
        refused = socket.receive_json()  # the API's own access policy answers
        assert refused["id"] == 2 and refused["error"]["status"] == 403


def test_the_socket_is_refused_without_a_session_or_from_another_origin(signed_in: SignedIn,
                                                                       client: TestClient) -> None:
    with pytest.raises(WebSocketDisconnect) as refused, client.websocket_connect("/console/events/ws") as socket:
        socket.receive_json()
    assert refused.value.code == 4401
    member = signed_in("member")
    with pytest.raises(WebSocketDisconnect) as foreign, member.websocket_connect(
            "/console/events/ws", headers={"origin": "http://evil.test"}) as socket:
        socket.receive_json()
    assert foreign.value.code == 4401
