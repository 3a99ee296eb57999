"""Schemathesis against the app's own OpenAPI document, on both engines, with data that fits the schema and
data that does not: no server error, and no response that breaks its schema.

Bounded: a few generated cases per operation and mode (``MAX_EXAMPLES``) on a database with one organization,
an owner key and an agent, so that generated requests reach the handlers rather than stop at authentication.
Runs in-process through ASGI (no network).  Schemathesis's own pytest plugin does not run on this pytest, so
the operations are driven with plain hypothesis here.  The document declares no OpenAPI links, so there is no
stateful sequence to follow.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode, checks

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


@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["positive", "negative"])
def test_no_server_error_and_every_response_matches_the_schema(db: Database, mode: GenerationMode) -> None:
    with db.transaction() as tx:
        scope = Scope(orgs.create_organization(tx, slug="acme", name="Acme").id)
        owner = {"Authorization": "Bearer " + api_keys.create_api_key(tx, scope, name="owner", role="owner").key}
        agents.create_agent(tx, scope, agent_key="bot")
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(db, signing_secret=b"s" * 32))
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(case=operation.as_strategy(generation_mode=mode))
        def exercise(case: schemathesis.Case) -> None:
            case.call_and_validate(headers=owner, checks=CHECKS)

        try:
            exercise()
        except Unsatisfiable:  # nothing to make invalid (no parameters, no body): only the positive mode applies
            assert mode is GenerationMode.NEGATIVE, operation.path
        except Exception as error:  # collect every operation's failure, then report them together
            failures.append(f"{operation.method.upper()} {operation.path}: {error}".splitlines()[0][:300])
    assert operations >= 50  # every operation of the API was exercised
    assert failures == []
