"""The OpenAPI document states the input rules the server enforces, from the same definitions.

For each rule: the document's own schema (read by ``jsonschema_rs``, an ECMA-262 validator, with the
document's ``$ref``s) refuses a value breaking it and accepts a valid one, and the server, on both engines,
refuses the first with a 422 naming the field and accepts the second.  The patterns are also compared, as
Schemathesis reads them, with the server's checks on generated strings, so the document and the server
cannot drift apart character by character.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import jsonschema_rs
import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from schemathesis.core.jsonschema.patterns import compile_ecma_pattern

from agentfy.channels import discord, telegram
from agentfy.gateway.app import create_app
from agentfy.gateway.routes.schemas import AGENT_KEY_PATTERN, fullmatch_pattern
from agentfy.gateway.routes.schemas_admin import CHAT_SCOPE_PATTERN
from agentfy.gateway.routes.vault import _FORM_FIELDS
from agentfy.identity import Scope
from agentfy.identity.keys import SLUG_PATTERN, agent_key_problem
from agentfy.permissions.senders import CHAT_SCOPE_PREFIXES
from agentfy.settings import Settings
from agentfy.store.db import Database
from agentfy.store.inputs import LABEL_PATTERN, TEXT_PATTERN, label_character_problem, text_problem
from agentfy.store.repos import agents, api_keys, orgs, teams

_DOCUMENT: dict[str, Any] = {}


def document() -> dict[str, Any]:
    """The app's OpenAPI document (it does not depend on the database's contents)."""
    if not _DOCUMENT:
        _DOCUMENT.update(create_app(Database("sqlite://"), signing_secret=b"s" * 32).openapi())
    return _DOCUMENT


def validator(schema: dict[str, Any]) -> jsonschema_rs.Draft202012Validator:
    """``schema`` read with the document's components (its ``$ref``s), as a contract tool reads it."""
    return _validator(json.dumps(schema, sort_keys=True))


@functools.cache
def _validator(schema: str) -> jsonschema_rs.Draft202012Validator:
    return jsonschema_rs.Draft202012Validator({**json.loads(schema), "components": document()["components"]})


def body_schema(method: str, path: str, media: str = "application/json") -> dict[str, Any]:
    schema: dict[str, Any] = document()["paths"][path][method]["requestBody"]["content"][media]["schema"]
    return schema


def parameter_schema(method: str, path: str, name: str) -> dict[str, Any]:
    for parameter in document()["paths"][path][method].get("parameters", []):
        if parameter["name"] == name:
            schema: dict[str, Any] = parameter["schema"]
            return schema
    raise AssertionError(f"{method} {path} has no parameter {name}")


# -- the patterns, as Schemathesis reads them, against the server's checks ---------------------------------
#: Strings around every boundary of the rules: controls, C1, the separators, NUL, ordinary and astral text.
_EDGES = st.sampled_from(["\x00", "\t", "\n", "\r", "\x1f", " ", "\x7f", "\x85", "\x9f", "\xa0", "\u2028",
                          "\u2029", "\u200b", "a", "Z", "0", "-", ":", "/", "é", "\U0001f600"])
_TEXTS = st.text(alphabet=st.one_of(st.characters(exclude_categories=["Cs"]), _EDGES), max_size=12)


def _matches(pattern: str) -> Callable[[str], bool]:
    """Whether a string matches ``pattern`` for both readers a contract tool has: Schemathesis's own reading
    (Python ``re``, ``$`` as the end of the string, ASCII classes) and ``jsonschema_rs``."""
    compiled = compile_ecma_pattern(pattern)
    assert compiled is not None, pattern
    checker = validator({"type": "string", "pattern": pattern})

    def matches(value: str) -> bool:
        ours, theirs = compiled.search(value) is not None, checker.is_valid(value)
        assert ours == theirs, (pattern, value)
        return ours

    return matches


@given(_TEXTS)
def test_the_text_pattern_accepts_exactly_the_text_policy(value: str) -> None:
    assert _matches(TEXT_PATTERN)(value) == (text_problem(value) is None)


@given(_TEXTS)
def test_the_label_pattern_accepts_exactly_the_label_characters(value: str) -> None:
    assert _matches(LABEL_PATTERN)(value) == (label_character_problem(value) is None)


@given(st.one_of(_TEXTS, st.from_regex(r"\A[a-z0-9-]{1,12}\Z")))
def test_the_slug_pattern_is_the_key_and_slug_shape(value: str) -> None:
    shape_ok = agent_key_problem(value) not in ("expected a lower-case slug: a-z, 0-9 and single hyphens, "
                                                "e.g. 'support-bot'", "is empty")
    assert _matches(SLUG_PATTERN)(value) == shape_ok
    assert AGENT_KEY_PATTERN == SLUG_PATTERN


@given(st.one_of(_TEXTS, st.from_regex(r"\A(?:group|guild|dm):[a-z\n]{0,5}\Z")))
def test_the_chat_scope_pattern_is_a_group_or_guild_label(value: str) -> None:
    expected = value.startswith(CHAT_SCOPE_PREFIXES) and label_character_problem(value) is None
    assert _matches(CHAT_SCOPE_PATTERN)(value) == expected


@given(st.one_of(_TEXTS, st.from_regex(r"\A@?[A-Za-z0-9_]{3,34}\Z")))
def test_the_bot_username_pattern_is_the_parsers_rule(value: str) -> None:
    try:
        telegram.parse_bot_username(value)
        parsed = True
    except ValueError:
        parsed = False
    assert _matches(fullmatch_pattern(telegram.BOT_USERNAME, prefix="@?"))(value) == parsed


@given(st.one_of(_TEXTS, st.from_regex(r"\A[0-9a-fA-F]{15,66}\Z")))
def test_the_discord_patterns_are_the_parsers_rules(value: str) -> None:
    def parses(parse: Callable[[str], str]) -> bool:
        try:
            parse(value)
        except ValueError:
            return False
        return True

    assert _matches(fullmatch_pattern(discord.APPLICATION_ID))(value) == parses(discord.parse_application_id)
    assert _matches(fullmatch_pattern(discord.PUBLIC_KEY))(value) == parses(discord.parse_public_key)


# -- each rule: stated, enforced, and a valid value accepted ---------------------------------------------
@dataclass
class Api:
    client: TestClient
    headers: dict[str, str]
    admin: dict[str, str]
    team_id: str

    def send(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        return self.client.request(method, path, json=body, headers=headers or self.headers)


@pytest.fixture
def api(db: Database, platform_admin: dict[str, str]) -> Any:
    # A credentials key: binding a bot stores its token encrypted (SQLite would make its own key file).
    settings = Settings(credentials_key=base64.b64encode(b"k" * 32).decode())
    with db.transaction() as tx:
        scope = Scope(orgs.create_organization(tx, slug="acme", name="Acme").id)
        person = orgs.create_user(tx, display_name="Pat")
        orgs.add_member(tx, scope, person.id, "owner")
        key = api_keys.create_api_key(tx, scope, name="owner", role="owner", user_id=person.id).key
        agents.create_agent(tx, scope, agent_key="bot")
        agents.create_agent(tx, scope, agent_key="helper")
        team = teams.create_team(tx, scope, name="Core")
    with TestClient(create_app(db, signing_secret=b"s" * 32, settings=settings)) as client:
        yield Api(client, {"Authorization": f"Bearer {key}"}, platform_admin, team.id)


@dataclass(frozen=True)
class BodyRule:
    """A JSON body field's rule: ``bad`` (merged into ``good``) breaks it, ``good`` is a valid body."""

    name: str
    method: str
    path: str  # as the document spells it
    url: str  # as the request is sent (``{team}``: the fixture's team)
    good: dict[str, Any]
    bad: dict[str, Any]
    field: str
    admin: bool = False
    statuses: tuple[int, ...] = (200, 201, 202)


_CRON = {"schedule": "0 9 * * 1"}
_MCP_SERVERS, _MCP_SERVERS_URL = "/v1/agents/{agent}/mcp-servers", "/v1/agents/bot/mcp-servers"
_MCP_SERVER = {"name": "search", "url": "https://mcp.example"}
_GRANT = {"chat_scope": "group:telegram:42", "config_type": "cron", "sender_id": "telegram:7"}
_ENTITY = {"agent": "bot", "name": "Ada", "entity_type": "person"}
_RELATION = {"agent": "bot", "source": 0, "target": 0, "relation": "knows"}
BODY_RULES = [
    BodyRule("team name non-empty", "post", "/v1/teams", "/v1/teams", {"name": "Ops"}, {"name": ""}, "name"),
    BodyRule("team member role non-empty", "post", "/v1/teams/{team_id}/members", "/v1/teams/{team}/members",
             {"agent": "bot", "role": "member"}, {"role": ""}, "role"),
    BodyRule("team key name non-empty", "post", "/v1/teams/{team_id}/api-keys", "/v1/teams/{team}/api-keys",
             {"name": "ci"}, {"name": ""}, "name"),
    BodyRule("API key name non-empty", "post", "/v1/org/api-keys", "/v1/org/api-keys", {"name": "ci"},
             {"name": ""}, "name"),
    BodyRule("MCP server name non-empty", "post", "/v1/agents/{agent}/mcp-servers", "/v1/agents/bot/mcp-servers",
             {"name": "search", "url": "https://mcp.example"}, {"name": ""}, "name"),
    BodyRule("MCP server name a label", "post", "/v1/agents/{agent}/mcp-servers", "/v1/agents/bot/mcp-servers",
             {"name": "search", "url": "https://mcp.example"}, {"name": "a\nb"}, "name"),
    BodyRule("MCP server url non-empty", "post", "/v1/agents/{agent}/mcp-servers", "/v1/agents/bot/mcp-servers",
             {"name": "search", "url": "https://mcp.example"}, {"url": ""}, "url"),
    BodyRule("MCP server url a label", "post", "/v1/agents/{agent}/mcp-servers", "/v1/agents/bot/mcp-servers",
             {"name": "search", "url": "https://mcp.example"}, {"url": "https://x\r\nHost: y"}, "url"),
    BodyRule("MCP server url http(s) or stdio:", "post", _MCP_SERVERS, _MCP_SERVERS_URL, _MCP_SERVER,
             {"url": "ftp://mcp.example"}, "url"),
    BodyRule("MCP server transport streamable-http or sse", "post", _MCP_SERVERS, _MCP_SERVERS_URL, _MCP_SERVER,
             {"config": {"transport": "websocket"}}, "config.transport"),
    BodyRule("MCP server config only its members", "post", _MCP_SERVERS, _MCP_SERVERS_URL, _MCP_SERVER,
             {"config": {"command": "sh"}}, "config.command"),
    BodyRule("MCP server call timeout above 0", "post", _MCP_SERVERS, _MCP_SERVERS_URL, _MCP_SERVER,
             {"config": {"timeout": 0}}, "config.timeout"),
    BodyRule("MCP server credential a name", "post", _MCP_SERVERS, _MCP_SERVERS_URL, _MCP_SERVER,
             {"config": {"credential": "Not A Name"}}, "config.credential"),
    BodyRule("skill name non-empty", "post", "/v1/skills", "/v1/skills", {"name": "greet", "content": "Say hi"},
             {"name": ""}, "name"),
    BodyRule("skill name a label", "post", "/v1/skills", "/v1/skills", {"name": "greet", "content": "Say hi"},
             {"name": "gr\teet"}, "name"),
    BodyRule("skill content non-empty", "post", "/v1/skills", "/v1/skills", {"name": "greet", "content": "Say hi"},
             {"content": ""}, "content"),
    BodyRule("agent display_name non-empty", "post", "/v1/agents", "/v1/agents", {"agent_key": "new"},
             {"display_name": ""}, "display_name"),
    BodyRule("agent display_name no NUL", "post", "/v1/agents", "/v1/agents", {"agent_key": "new"},
             {"display_name": "a\x00b"}, "display_name"),
    BodyRule("a JSON object's keys hold no NUL, at any depth", "post", "/v1/agents", "/v1/agents",
             {"agent_key": "new", "config": {"tools": [{"name": "search"}]}},
             {"config": {"tools": [{"na\x00me": "search"}]}}, "config"),
    BodyRule("a JSON object's strings hold no NUL, at any depth", "post", "/v1/agents", "/v1/agents",
             {"agent_key": "new", "config": {"tools": [{"name": "search"}]}},
             {"config": {"tools": [{"name": "sea\x00rch"}]}}, "config"),
    BodyRule("schedule non-empty", "post", "/v1/agents/{agent}/cron-jobs", "/v1/agents/bot/cron-jobs", _CRON,
             {"schedule": ""}, "schedule"),
    BodyRule("schedule a label", "post", "/v1/agents/{agent}/cron-jobs", "/v1/agents/bot/cron-jobs", _CRON,
             {"schedule": "0 9 * * 1\n"}, "schedule"),
    BodyRule("schedule of the schedule grammar's shape", "post", "/v1/agents/{agent}/cron-jobs",
             "/v1/agents/bot/cron-jobs", _CRON, {"schedule": "every 5 minutes"}, "schedule"),
    BodyRule("timezone of an IANA name's shape", "post", "/v1/agents/{agent}/cron-jobs", "/v1/agents/bot/cron-jobs",
             _CRON, {"timezone": "../etc"}, "timezone"),
    BodyRule("chat_scope non-empty", "post", "/v1/agents/{agent}/grants", "/v1/agents/bot/grants", _GRANT,
             {"chat_scope": ""}, "chat_scope"),
    BodyRule("chat_scope a label", "post", "/v1/agents/{agent}/grants", "/v1/agents/bot/grants", _GRANT,
             {"chat_scope": "group:telegram:\x1b42"}, "chat_scope"),
    BodyRule("chat_scope a group or guild", "post", "/v1/agents/{agent}/grants", "/v1/agents/bot/grants", _GRANT,
             {"chat_scope": "telegram:42"}, "chat_scope"),
    BodyRule("sender_id a label", "post", "/v1/agents/{agent}/grants", "/v1/agents/bot/grants", _GRANT,
             {"sender_id": "telegram:7\u2028"}, "sender_id"),
    BodyRule("sender_id not a chat scope", "post", "/v1/agents/{agent}/grants", "/v1/agents/bot/grants", _GRANT,
             {"sender_id": "guild:7"}, "sender_id"),
    BodyRule("link kind a label", "post", "/v1/agents/{agent}/links", "/v1/agents/bot/links",
             {"target": "helper", "kind": "delegate"}, {"kind": "dele\x85gate"}, "kind"),
    BodyRule("link kind non-empty", "post", "/v1/agents/{agent}/links", "/v1/agents/bot/links",
             {"target": "helper", "kind": "delegate"}, {"kind": ""}, "kind"),
    BodyRule("session_key non-empty", "post", "/v1/sessions", "/v1/sessions", {"session_key": "s1", "agent": "bot"},
             {"session_key": ""}, "session_key"),
    BodyRule("session_key a label", "post", "/v1/sessions", "/v1/sessions", {"session_key": "s1", "agent": "bot"},
             {"session_key": "s\n1"}, "session_key"),
    BodyRule("session user_id a label", "post", "/v1/sessions", "/v1/sessions",
             {"session_key": "s1", "agent": "bot", "user_id": ""}, {"user_id": "group:\n1"}, "user_id"),
    BodyRule("memory document path non-empty", "post", "/v1/agents/{agent}/memory/documents:batch-upsert",
             "/v1/agents/bot/memory/documents:batch-upsert", {"documents": [{"path": "a.md", "content": ""}]},
             {"documents": [{"path": "", "content": ""}]}, "documents[0].path"),
    BodyRule("entity name non-empty", "post", "/v1/knowledge/ingest", "/v1/knowledge/ingest",
             {"entities": [_ENTITY]}, {"entities": [{**_ENTITY, "name": ""}]}, "entities[0].name"),
    BodyRule("entity type non-empty", "post", "/v1/knowledge/ingest", "/v1/knowledge/ingest",
             {"entities": [_ENTITY]}, {"entities": [{**_ENTITY, "entity_type": ""}]}, "entities[0].entity_type"),
    BodyRule("relation non-empty", "post", "/v1/knowledge/ingest", "/v1/knowledge/ingest",
             {"entities": [_ENTITY], "relations": [_RELATION]},
             {"relations": [{**_RELATION, "relation": ""}]}, "relations[0].relation"),
    BodyRule("relation endpoint index bounded", "post", "/v1/knowledge/ingest", "/v1/knowledge/ingest",
             {"entities": [_ENTITY], "relations": [_RELATION]},
             {"relations": [{**_RELATION, "source": 10_000}]}, "relations[0].source"),
    BodyRule("org slug a slug", "post", "/v1/orgs", "/v1/orgs", {"slug": "initech", "name": "Initech"},
             {"slug": "Initech Corp"}, "slug", admin=True),
    BodyRule("org slug non-empty", "post", "/v1/orgs", "/v1/orgs", {"slug": "initech", "name": "Initech"},
             {"slug": ""}, "slug", admin=True),
    BodyRule("org name non-empty", "post", "/v1/orgs", "/v1/orgs", {"slug": "initech", "name": "Initech"},
             {"name": ""}, "name", admin=True),
    BodyRule("owner display_name non-empty", "post", "/v1/orgs", "/v1/orgs",
             {"slug": "initech", "name": "Initech", "owner": {"display_name": "Bill"}},
             {"owner": {"display_name": ""}}, "owner.display_name", admin=True),
    BodyRule("member display_name non-empty", "post", "/v1/org/members", "/v1/org/members",
             {"display_name": "Sam"}, {"display_name": ""}, "display_name"),
    BodyRule("member: user_id or display_name, not both", "post", "/v1/org/members", "/v1/org/members",
             {"display_name": "Sam"}, {"user_id": "user-calm-rivers-k8m4p2d7n9x3"}, "user_id"),
    BodyRule("member: user_id or display_name, not neither", "post", "/v1/org/members", "/v1/org/members",
             {"display_name": "Sam", "role": "member"}, {"display_name": None}, "user_id"),
    BodyRule("bot_username a Telegram username", "put", "/v1/agents/{agent}/channels/telegram",
             "/v1/agents/bot/channels/telegram",
             {"bot_username": "@SupportBot", "bot_token": "123456:" + "A" * 35}, {"bot_username": "@support"},
             "bot_username"),
    BodyRule("application_id a snowflake", "put", "/v1/agents/{agent}/channels/discord",
             "/v1/agents/bot/channels/discord",
             {"application_id": "123456789012345678", "public_key": "ab" * 32}, {"application_id": "12345"},
             "application_id"),
    BodyRule("public_key 64 hex digits", "put", "/v1/agents/{agent}/channels/discord",
             "/v1/agents/bot/channels/discord",
             {"application_id": "123456789012345678", "public_key": "ab" * 32}, {"public_key": "xy" * 32},
             "public_key"),
]


@pytest.mark.parametrize("rule", BODY_RULES, ids=[rule.name for rule in BODY_RULES])
def test_a_body_rule_is_stated_and_enforced(api: Api, rule: BodyRule) -> None:
    bad = {**rule.good, **rule.bad}
    schema = validator(body_schema(rule.method, rule.path))
    assert schema.is_valid(rule.good), rule.good
    assert not schema.is_valid(bad), f"the document does not state {rule.name}"
    url = rule.url.replace("{team}", api.team_id)
    headers = api.admin if rule.admin else api.headers
    refused = api.send(rule.method.upper(), url, bad, headers)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["field"] == rule.field
    accepted = api.send(rule.method.upper(), url, rule.good, headers)
    assert accepted.status_code in rule.statuses, accepted.text


@dataclass(frozen=True)
class PathRule:
    name: str
    method: str
    path: str
    parameter: str
    url: str  # with {value} for the parameter
    good: str
    bad: str
    good_status: int


PATH_RULES = [
    PathRule("session key non-empty", "get", "/v1/sessions/{session_key}/messages", "session_key",
             "/v1/sessions/{value}/messages", "open-1", "", 200),
    PathRule("session key a label", "get", "/v1/sessions/{session_key}", "session_key", "/v1/sessions/{value}",
             "open-1", "open\t1", 200),
    PathRule("agent key at most 100 characters", "get", "/v1/agents/{agent}", "agent", "/v1/agents/{value}",
             "bot", "b" * 101, 200),
]


@pytest.mark.parametrize("rule", PATH_RULES, ids=[rule.name for rule in PATH_RULES])
def test_a_path_rule_is_stated_and_enforced(api: Api, rule: PathRule) -> None:
    schema = validator(parameter_schema(rule.method, rule.path, rule.parameter))
    assert schema.is_valid(rule.good)
    assert not schema.is_valid(rule.bad), f"the document does not state {rule.name}"
    assert api.send("POST", "/v1/sessions", {"session_key": "open-1", "agent": "bot"}).status_code == 201
    refused = api.send(rule.method.upper(), rule.url.format(value=quote(rule.bad, safe="")))
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["field"] == rule.parameter
    assert api.send(rule.method.upper(), rule.url.format(value=rule.good)).status_code == rule.good_status


def test_a_query_scope_holds_no_nul_in_the_document() -> None:
    schema = validator(parameter_schema("get", "/v1/agents/{agent}/memory/documents", "user_id"))
    assert schema.is_valid("group:telegram:1") and schema.is_valid("")
    assert not schema.is_valid("a\x00b")


# -- the vault's multipart form ----------------------------------------------------------------------------
UPLOAD_FORMS = [  # (name, form as the schema sees it, files sent, data sent, field named in the 422)
    ("one file", {"agent_id": "bot", "path": "a.txt", "file": "x"}, [("file", b"x")], {"agent_id": "bot",
                                                                                       "path": "a.txt"}, None),
    ("a batch", {"agent_id": "bot", "paths": ["b.txt"], "files": ["x"]}, [("files", b"x")],
     {"agent_id": "bot", "paths": ["b.txt"]}, None),
    ("a file and a batch", {"agent_id": "bot", "path": "c.txt", "file": "x", "paths": ["d.txt"]},
     [("file", b"x")], {"agent_id": "bot", "path": "c.txt", "paths": ["d.txt"]}, "file"),
    ("a file without its path", {"agent_id": "bot", "file": "x"}, [("file", b"x")], {"agent_id": "bot"}, "path"),
    ("an unknown field", {"agent_id": "bot", "path": "e.txt", "file": "x", "tenant_id": "t"}, [("file", b"x")],
     {"agent_id": "bot", "path": "e.txt", "tenant_id": "t"}, "tenant_id"),
    ("an empty path", {"agent_id": "bot", "path": "", "file": "x"}, [("file", b"x")],
     {"agent_id": "bot", "path": ""}, "path"),
    ("an empty batch path", {"agent_id": "bot", "paths": [""], "files": ["x"]}, [("files", b"x")],
     {"agent_id": "bot", "paths": [""]}, "paths[0]"),
    ("an agent reference breaking both forms", {"agent_id": "Bot!", "path": "f.txt", "file": "x"},
     [("file", b"x")], {"agent_id": "Bot!", "path": "f.txt"}, "agent_id"),
]


@pytest.mark.parametrize(("form", "files", "data", "field"), [case[1:] for case in UPLOAD_FORMS],
                         ids=[case[0] for case in UPLOAD_FORMS])
def test_the_upload_form_rules_are_stated_and_enforced(api: Api, form: dict[str, Any],
                                                       files: list[tuple[str, bytes]], data: dict[str, Any],
                                                       field: str | None) -> None:
    schema = validator(body_schema("post", "/v1/vault/documents", "multipart/form-data"))
    assert schema.is_valid(form) == (field is None)
    response = api.client.post("/v1/vault/documents", headers=api.headers, data=data,
                               files=[(name, ("f.bin", content, "text/plain")) for name, content in files])
    if field is None:
        assert response.status_code == 201, response.text
    else:
        assert response.status_code == 422, response.text
        assert response.json()["error"]["field"] == field


def test_the_upload_form_states_exactly_the_fields_the_route_reads() -> None:
    reference = body_schema("post", "/v1/vault/documents", "multipart/form-data")["$ref"]
    form = document()["components"]["schemas"][reference.rpartition("/")[2]]
    assert set(form["properties"]) == _FORM_FIELDS
    assert form["additionalProperties"] is False


def test_the_agent_reference_states_the_key_length() -> None:
    reference = document()["components"]["schemas"]["AgentRef"]
    key_branch = next(branch for branch in reference["anyOf"] if "$ref" not in branch)
    assert key_branch["maxLength"] == 100 and key_branch["pattern"] == AGENT_KEY_PATTERN


def test_the_document_is_json_and_states_no_extension_keyword_it_merged() -> None:
    assert "x-body-rules" not in json.dumps(document())
