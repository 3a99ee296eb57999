"""Schemathesis against the app's own OpenAPI document: no 500 and no response that breaks its schema.

Bounded: a few generated cases per operation (``MAX_EXAMPLES``) on an embedded SQLite database with one
organization, an owner key and an agent, so that generated requests reach the handlers rather than stop at
authentication.  Runs in-process through ASGI (no network).  Schemathesis's own pytest plugin does not run on
this pytest, so the operations are driven with plain hypothesis here.
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks

from agentfy.gateway.app import create_app
from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, orgs

MAX_EXAMPLES = 6
#: What the issue asks: no server error, and every response (status, content type, body, headers) as the
#: schema says.  Not "positive data acceptance": the API refuses schema-valid values that break rules a
#: JSON schema cannot express (an ID's words must be in the dictionaries; a key may not look like an ID).
CHECKS = [checks.not_a_server_error, checks.status_code_conformance, checks.content_type_conformance,
          checks.response_schema_conformance, checks.response_headers_conformance]


def test_no_server_error_and_every_response_matches_the_schema(sqlite_db: Database) -> None:
    with sqlite_db.transaction() as tx:
        scope = Scope(orgs.create_organization(tx, slug="acme", name="Acme").id)
        owner = {"Authorization": "Bearer " + api_keys.create_api_key(tx, scope, name="owner", role="owner").key}
        agents.create_agent(tx, scope, agent_key="bot")
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(sqlite_db, signing_secret=b"s" * 32))
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(case=operation.as_strategy())
        def exercise(case: schemathesis.Case) -> None:
            case.call_and_validate(headers=owner, checks=CHECKS)

        try:
            exercise()
        except Exception as error:  # collect every operation's failure, then report them together
            failures.append(f"{operation.method.upper()} {operation.path}: {error}".splitlines()[0][:300])
    assert operations >= 50  # every operation of the API was exercised
    assert failures == []
