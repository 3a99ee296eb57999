"""Schemathesis against the app's own OpenAPI document, on both engines: every response as the document says,
whatever the input, for two organizations at once.

Every check Schemathesis has that applies to this API runs (:data:`CHECKS`), on data that fits the schema and
data that does not.  The only refusals of schema-valid data excused are the rules no JSON schema can state,
each named in the one table ``SCHEMA_INEXPRESSIBLE`` (``tests/gateway/contract_rules.py``, shared with
``make fuzz``).

Two organizations, each with an owner key that acts as a person (so the chat and invitation operations get past
authorization) and an agent.  Organization A calls every operation; B's objects (its agent, and what B's own
generated requests create) are put into A's paths, which must answer exactly what an ID naming nothing gets.
A bounded stateful run follows the links Schemathesis infers between operations (create, then read, change,
delete): what ``use_after_free`` and ``ensure_resource_availability`` need.  ``unsupported_method``,
``missing_required_header`` and ``allow_header_conformance`` act on the cases of Schemathesis's coverage
phase, which ``make fuzz`` runs; here every method a path does not declare is tried directly instead.

Both engines from one generation: generating the cases is most of the time and depends on the document alone
(derandomized, a fixed seed per operation), never on the engine behind the app, so each case is generated
once and sent to the SQLite app and to the PostgreSQL app (:class:`Engines`), each its own copy; a failure
names its engine, and one engine failing never keeps the other from being tried.  The stateful run and the 405
table stay one run per engine: a stateful step is built from the responses before it (the IDs an engine gave
out, which statuses let a link be followed), so the other engine's steps are not a replay of this one's.

Deterministic: the hypothesis profile of ``tests/conftest.py`` derandomizes generation and each operation has
its own fixed seed, so a failure here is the same failure on the next run with the same code.  Bounded: a few
cases per operation and mode (:data:`MAX_EXAMPLES`).  In-process through ASGI (no network); Schemathesis's own
pytest plugin does not run on this pytest, so the operations are driven with plain hypothesis.  Open-ended
exploration against a live server is ``make fuzz``.
"""

from __future__ import annotations

import base64
import copy
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

import jsonschema
import pytest
import schemathesis
import sqlalchemy as sa
from hypothesis import HealthCheck, given, seed, settings
from hypothesis.errors import Unsatisfiable
from hypothesis.stateful import run_state_machine_as_test
from schemathesis import GenerationMode, checks
from schemathesis.core import NOT_SET
from schemathesis.core.failures import FailureGroup
from starlette.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.identity import Scope
from agentfy.ids import format_id
from agentfy.settings import load_settings
from agentfy.store import schema
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, orgs
from tests.gateway.contract_rules import ensure_resource_availability, positive_data_acceptance
from tests.helpers.mcp_server import NoNetwork
from tests.helpers.mock_anthropic import MockAnthropic
from tests.helpers.mock_openai import MockOpenAI

MAX_EXAMPLES = 4
CROSS_TENANT_EXAMPLES = 2
STATEFUL_EXAMPLES = 12
STATEFUL_STEPS = 8

#: Every check of Schemathesis 4 that applies to a request/response API with bearer keys, with the project's
#: ``positive_data_acceptance`` in place of Schemathesis's (the same check, with the excused rules).  Not
#: ``max_response_time`` (a timing budget: on a loaded machine it measures the machine) nor
#: ``object_level_authorization`` (it needs Schemathesis's multi-identity auth document, which ``make fuzz``
#: gives it; here :func:`test_another_organizations_objects_are_not_found` tries the same reads directly).
CHECKS = [checks.not_a_server_error, checks.status_code_conformance, checks.content_type_conformance,
          checks.response_schema_conformance, checks.response_headers_conformance,
          checks.negative_data_rejection, positive_data_acceptance, checks.missing_required_header,
          checks.unsupported_method, checks.allow_header_conformance, checks.ignored_auth,
          checks.use_after_free, ensure_resource_availability]


@dataclass
class Organization:
    """A tenant as the test uses it: its owner key's headers and the IDs of what it has."""

    headers: dict[str, str]
    agent_id: str
    ids: set[str] = field(default_factory=set)


@dataclass
class Api:
    engine: str
    app: Any
    schema: Any
    a: Organization
    b: Organization


def _organization(db: Database, slug: str) -> Organization:
    with db.transaction() as tx:
        org = orgs.create_organization(tx, slug=slug, name=slug.title())
        scope = Scope(org.id)
        person = orgs.create_user(tx, display_name=f"{slug} owner", email=f"owner@{slug}.example")
        orgs.add_member(tx, scope, person.id, "owner")
        key = api_keys.create_api_key(tx, scope, name="owner", role="owner", user_id=person.id)
        agent = agents.create_agent(tx, scope, agent_key="bot")
    return Organization({"Authorization": "Bearer " + key.key}, agent.id, {org.id, person.id, key.record.id,
                                                                            agent.id})


def _api(db: Database, workspaces: Path) -> Api:
    a, b = _organization(db, "acme"), _organization(db, "globex")
    # A credentials key, as every server database needs one to store bot tokens (SQLite would make its own).
    configuration = load_settings({"credentials_key": base64.b64encode(b"k" * 32).decode()})
    app = create_app(db, signing_secret=b"s" * 32, settings=configuration, workspace_root=workspaces)
    # An agent's model may be set to any server (PUT /v1/agents/{agent}/model) and then called (its check, a
    # message): every URL reaches a fake OpenAI-compatible or Anthropic server, never the network.
    app.state.gateway.runtime.providers.clients = MockOpenAI().clients()
    app.state.gateway.runtime.providers.anthropic_clients = MockAnthropic().clients()
    # An MCP server may be registered at any http(s) URL and then listed (its tools route, a run): none is
    # reached; each is unavailable, as a server that is down.
    app.state.gateway.runtime.mcp.connections = NoNetwork()
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    # Schemathesis's own generation settings, for whatever of it does not go through the @given below: no
    # randomness of its own, no example database.  The owner key is sent with every request, so the bearer
    # header is not generated (a generated one would be replaced, and a negative case built by leaving it out
    # would be sent with it).  ``ignored_auth`` still tries every operation without and with a wrong key.
    schema.config.generation.update(deterministic=True, database="none", with_security_parameters=False)
    return Api(db.engine.dialect.name, app, schema, a, b)


@pytest.fixture
def api(db: Database, tmp_path: Path) -> Api:
    """The app on one engine (the test runs once per engine)."""
    return _api(db, tmp_path / "workspaces")


@dataclass
class Engines:
    """The app on every engine at once, for the tests that generate each case once and send it to each.

    Generation depends on the document alone (derandomized, each operation its own seed), never on the
    engine behind it, and it is most of these tests' time: generating once and sending every case to both
    apps tests exactly what one run per engine would, for half the generation."""

    apis: list[Api]
    #: Why PostgreSQL is not among :attr:`apis` (no server outside CI), or ``None``.
    missing: str | None

    def operations(self) -> Iterator[list[tuple[Api, Any]]]:
        """Each operation of the document, as every engine's schema has it (the first one generates)."""
        for same in zip(*(_operations(api.schema) for api in self.apis), strict=True):
            assert len({_label(operation) for operation in same}) == 1, [_label(operation) for operation in same]
            yield list(zip(self.apis, same, strict=True))

    def finish(self) -> None:
        """After the SQLite half passed: say that the PostgreSQL half did not run, and why."""
        if self.missing is not None:
            pytest.skip(f"passed on SQLite, not run on PostgreSQL: {self.missing}")


@pytest.fixture
def engines(request: pytest.FixtureRequest, sqlite_db: Database, tmp_path: Path) -> Engines:
    apis = [_api(sqlite_db, tmp_path / "sqlite-workspaces")]
    missing = None
    try:
        pg_db: Database = request.getfixturevalue("pg_db")  # under CI=true a missing server fails here
    except pytest.skip.Exception as skipped:
        missing = skipped.msg
    else:
        apis.append(_api(pg_db, tmp_path / "postgresql-workspaces"))
    documents = [api.schema.raw_schema for api in apis]
    assert all(document == documents[0] for document in documents), "the engines' OpenAPI documents differ"
    return Engines(apis, missing)


class EngineFailures(Exception):
    """What one generated case broke, on each engine it broke on (each line names the engine)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def _copy(value: Any) -> Any:
    """A deep copy of ``value`` that keeps Schemathesis's "no body" marker itself (it is compared by identity)."""
    return copy.deepcopy(value, {id(NOT_SET): NOT_SET})


def _twin(case: schemathesis.Case, operation: Any) -> schemathesis.Case:
    """The same request as ``case``, for ``operation`` (the same operation of another engine's schema): the
    same parameters, body and media type, and the same generation metadata (positive or negative, and where),
    which ``negative_data_rejection`` and ``positive_data_acceptance`` read.  Copies, so what one engine's
    call does to its case never reaches the next engine's."""
    return operation.Case(path_parameters=_copy(case.path_parameters), headers=_copy(dict(case.headers)),
                          cookies=_copy(case.cookies), query=_copy(case.query), body=_copy(case.body),
                          media_type=case.media_type, multipart_content_types=_copy(case.multipart_content_types),
                          _meta=_copy(case._meta))


def _on_every_engine(same: list[tuple[Api, Any]],
                     call: Callable[[Api, schemathesis.Case], None]) -> Callable[[schemathesis.Case], None]:
    """``call`` for one generated case on every engine, each with its own copy; every engine is tried even
    when an earlier one fails, and the failures name their engine."""

    def each(case: schemathesis.Case) -> None:
        lines = []
        for api, operation in same:
            try:
                call(api, _twin(case, operation))
            except (Exception, FailureGroup) as error:
                lines.append(_describe(f"{api.engine}: {_label(operation)}", error))
        if lines:
            raise EngineFailures(lines)

    return each


def _operations(schema: Any) -> Iterator[Any]:
    for result in schema.get_all_operations():
        yield result.ok()


def _label(operation: Any) -> str:
    return f"{operation.method.upper()} {operation.path}"


def _describe(label: str, error: BaseException) -> str:
    """The failure on one line: the operation, what broke, the response and the ``curl`` that replays it."""
    text = " ".join(str(error).split())
    if isinstance(error, FailureGroup):
        text = text.removeprefix("Schemathesis found ").replace(" (1 sub-exception)", "")
    return f"{label}: {text}"[:700]


def _report(failures: list[str]) -> None:
    if failures:
        pytest.fail(f"{len(failures)} failures:\n" + "\n".join(sorted(set(failures))), pytrace=False)


def _run(operation: Any, strategy: Any, examples: int, call: Callable[[schemathesis.Case], None]) -> list[str]:
    """Run ``call`` on ``examples`` generated cases; the failures found, one line each."""

    @settings(max_examples=examples, suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def exercise(case: schemathesis.Case) -> None:
        call(case)

    if settings.default.derandomize:  # each operation its own fixed data, not one sequence shared by all
        exercise = seed(zlib.crc32(_label(operation).encode()))(exercise)

    try:
        exercise()
    except Unsatisfiable:
        raise
    except EngineFailures as error:
        return error.lines
    except (Exception, FailureGroup) as error:  # collect every operation's failures, then report them together
        return [_describe(_label(operation), error)]
    return []


@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["positive", "negative"])
def test_every_response_keeps_the_contract_for_any_input(engines: Engines, mode: GenerationMode) -> None:
    failures: list[str] = []
    operations = 0

    def call(api: Api, case: schemathesis.Case) -> None:
        case.call_and_validate(headers=api.a.headers, checks=CHECKS)

    for same in engines.operations():
        operations += 1
        operation = same[0][1]
        try:
            failures += _run(operation, operation.as_strategy(generation_mode=mode), MAX_EXAMPLES,
                             _on_every_engine(same, call))
        except Unsatisfiable:  # nothing to make invalid (no parameters, no body): only the positive mode applies
            assert mode is GenerationMode.NEGATIVE, operation.path
    assert operations >= 70  # every operation of the API was exercised
    _report(failures)
    engines.finish()


_ID_TEXT = re.compile(r"^[a-z]+(?:-[a-z]+)*-[a-z]+-[a-z]+-[0-9a-hjkmnp-tv-z]{12}$")


def _ids_in(value: Any) -> Iterator[str]:
    if isinstance(value, str) and _ID_TEXT.match(value):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _ids_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _ids_in(item)


def _json(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _error_code(response: Any) -> str | None:
    body = _json(response)
    error = body.get("error") if isinstance(body, dict) else None
    return error.get("code") if isinstance(error, dict) else None


def _harvest(engines: Engines) -> None:
    """Organization B's own generated creations, so A has more of B's objects to ask for than B's agent."""
    for same in engines.operations():
        operation = same[0][1]
        if operation.method.upper() != "POST":
            continue

        def create(api: Api, case: schemathesis.Case) -> None:
            response = case.call(headers=api.b.headers)
            if 200 <= response.status_code < 300:
                api.b.ids.update(_ids_in(_json(response)))

        _run(operation, operation.as_strategy(generation_mode=GenerationMode.POSITIVE), MAX_EXAMPLES,
             _on_every_engine(same, create))


def _path_schema(operation: Any, name: str) -> dict[str, Any]:
    for parameter in operation.path_parameters:
        if parameter.name == name:
            return dict(parameter.definition.get("schema", {}))
    return {}


def _missing_like(value: str) -> str:
    """An ID of the same entity as ``value`` that names nothing (its words and suffix drawn from ``value``, so
    the run is the same every time)."""
    source = Random(value)
    return format_id(value.rsplit("-", 3)[0], random=source.randbytes)


def _entity(value: str) -> str:
    return value.rsplit("-", 3)[0]


def _one_per_entity(values: Iterator[str]) -> dict[str, str]:
    """The first ID of each entity among ``values``, by entity: what an operation finds depends on the entity,
    not on which of B's objects of that entity is named."""
    first: dict[str, str] = {}
    for value in values:
        first.setdefault(_entity(value), value)
    return first


def _answers_as_for_nothing(name: str, values: dict[str, str]) -> Callable[[Api, schemathesis.Case], None]:
    """A call that names, in A's request, B's object ``values[engine]`` as the path parameter ``name``, then
    an ID of the same entity naming nothing, and requires the two answers to be the same."""

    def call(api: Api, case: schemathesis.Case) -> None:
        value = values[api.engine]
        case.path_parameters = {**case.path_parameters, name: value}
        response = case.call(headers=api.a.headers)
        case.validate_response(response, checks=[checks.not_a_server_error, checks.status_code_conformance,
                                                 checks.response_schema_conformance])
        case.path_parameters = {**case.path_parameters, name: _missing_like(value)}
        missing = case.call(headers=api.a.headers)
        case.path_parameters = {**case.path_parameters, name: value}
        theirs_error, missing_error = _error_code(response), _error_code(missing)
        assert (response.status_code, theirs_error) == (missing.status_code, missing_error), (
            f"organization B's {name} {value} answers {response.status_code} {theirs_error} to "
            f"organization A where an ID naming nothing answers {missing.status_code} {missing_error}: "
            f"{case.method} {case.formatted_path}")

    return call


#: Operations whose path value is not one organization's object: the ID explainer describes any ID.
NOT_TENANT_OBJECTS = {"GET /v1/ids/{value}"}


@pytest.mark.slow
def test_another_organizations_objects_are_not_found(engines: Engines) -> None:
    """Organization A naming one of B's objects in a path gets exactly what it gets for an ID that names
    nothing: the same status and error, so a response tells nothing about another organization's objects.

    Each engine names its own B's objects (their IDs differ); the rest of the request is generated once per
    entity and sent to each engine that has an object of that entity."""
    _harvest(engines)
    failures: list[str] = []
    tried = {api.engine: 0 for api in engines.apis}
    for same in engines.operations():
        operation = same[0][1]
        if _label(operation) in NOT_TENANT_OBJECTS:
            continue
        for parameter in operation.path_parameters:
            validator = _validator(operation.schema.raw_schema, _path_schema(operation, parameter.name))
            theirs = {api.engine: _one_per_entity(value for value in sorted(api.b.ids) if validator.is_valid(value))
                      for api in engines.apis}
            for entity in sorted(set().union(*theirs.values())):
                named = [(api, twin) for api, twin in same if entity in theirs[api.engine]]
                for api, _ in named:
                    tried[api.engine] += 1
                first = theirs[named[0][0].engine][entity]
                strategy = operation.as_strategy(generation_mode=GenerationMode.POSITIVE,
                                                 path_parameters={parameter.name: first})

                failures += _run(operation, strategy, CROSS_TENANT_EXAMPLES, _on_every_engine(
                    named, _answers_as_for_nothing(parameter.name, {api.engine: theirs[api.engine][entity]
                                                                    for api, _ in named})))
    assert all(count >= 30 for count in tried.values()), tried  # B's agent alone fits every /v1/agents/{agent}/...
    _report(failures)
    engines.finish()


HTTP_METHODS = ("GET", "PUT", "POST", "DELETE", "PATCH")


def _validator(document: dict[str, Any], schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    """A validator of ``schema``, a part of ``document`` whose ``$ref`` name the document's components."""
    return jsonschema.Draft202012Validator({**schema, "components": document.get("components", {})})


def _template_pattern(document: dict[str, Any], path: str, item: dict[str, Any]) -> re.Pattern[str]:
    """The concrete paths ``path`` fits: a parameter whose schema allows a ``/`` spans segments."""
    schemas = {parameter["name"]: parameter.get("schema", {}) for operation in item.values()
               for parameter in operation.get("parameters", []) if parameter["in"] == "path"}

    def piece(match: re.Match[str]) -> str:
        spans = _validator(document, schemas.get(match.group(1), {})).is_valid("a/b")
        return ".+" if spans else "[^/]+"

    return re.compile(re.sub(r"\\\{([^}]+)\\\}", piece, re.escape(path)))


def _declared_methods(document: dict[str, Any], url: str) -> set[str]:
    """The methods the document declares for ``url``, over every path template it fits (a concrete path can
    fit two: ``/v1/agents/x/channels/telegram`` fits ``…/channels/{platform}`` too)."""
    return {method.upper() for path, item in document["paths"].items()
            if _template_pattern(document, path, item).fullmatch(url) for method in item}


@pytest.mark.slow
def test_a_method_a_path_does_not_have_is_405_naming_the_ones_it_has(api: Api) -> None:
    """``unsupported_method`` and ``allow_header_conformance`` as Schemathesis's coverage phase checks them
    (``make fuzz`` runs that phase), here for every path and every method the document does not declare."""
    failures = []
    tried = 0
    with TestClient(api.app) as client:
        document = client.get("/openapi.json").json()
        for path in document["paths"]:
            url = re.sub(r"\{[^}]+\}", "x", path)
            declared = _declared_methods(document, url)
            for method in sorted(set(HTTP_METHODS) - declared):
                tried += 1
                response = client.request(method, url, headers=api.a.headers)
                allowed = {part.strip() for part in response.headers.get("allow", "").split(",") if part.strip()}
                if response.status_code != 405 or not declared <= allowed <= declared | {"HEAD", "OPTIONS"}:
                    failures.append(f"{method} {url}: {response.status_code}, Allow: {sorted(allowed)}, "
                                    f"declared: {sorted(declared)}")
    assert tried >= 150  # 54 paths, most with three or four methods they do not have
    _report(failures)


class Snapshot:
    """Every row of the database as it is now, by primary key; :meth:`restore` deletes every row written since
    (children first) and empties the app's caches.  Each stateful example starts from the same database, so
    what an example's requests answer depends on the example alone: a name another example already took (409
    instead of 201) would otherwise change which links the next run can follow, and Hypothesis refuses data
    generation that depends on state outside the example."""

    def __init__(self, db: Database, app: Any) -> None:
        self.db, self.app = db, app
        self.tables = [table for table in reversed(schema.metadata.sorted_tables) if table.primary_key.columns]
        with db.transaction(write=False) as tx:
            self.kept = {table.name: {tuple(row) for row in tx.all(sa.select(*table.primary_key.columns))}
                         for table in self.tables}

    def restore(self) -> None:
        with self.db.transaction() as tx:
            for table in self.tables:
                key = list(table.primary_key.columns)
                for row in tx.all(sa.select(*key)):
                    if tuple(row) not in self.kept[table.name]:
                        tx.execute(sa.delete(table).where(*(column == value for column, value in zip(key, row,
                                                                                                      strict=True))))
        gateway = self.app.state.gateway
        gateway.router.clear()
        gateway.principals.clear()
        gateway.rendered_agents.clear()


@pytest.mark.slow
def test_following_links_keeps_the_contract(db: Database, api: Api) -> None:
    """Create, then read, change and delete what was created, along the links Schemathesis infers: deleted
    objects must be gone (``use_after_free``) and created ones there (``ensure_resource_availability``).  Each
    example starts from the same database (:class:`Snapshot`)."""
    machine = api.schema.as_state_machine()
    headers = api.a.headers
    snapshot = Snapshot(db, api.app)

    class Workflow(machine):  # type: ignore[misc, valid-type]
        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {"headers": headers}

        def teardown(self) -> None:
            super().teardown()
            snapshot.restore()

        def validate_response(self, response: Any, case: schemathesis.Case, additional_checks: Any = None,
                              **kwargs: Any) -> None:
            case.validate_response(response, checks=CHECKS, headers=headers,
                                   transport_kwargs={"headers": headers}, recorder=getattr(self, "recorder", None))

    run_state_machine_as_test(Workflow, settings=settings(max_examples=STATEFUL_EXAMPLES,
                                                          stateful_step_count=STATEFUL_STEPS,
                                                          suppress_health_check=list(HealthCheck)))
