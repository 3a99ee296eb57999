"""What the contract tests excuse, in one place: the refusals of schema-valid input that no JSON schema can state.

Both the in-repo Schemathesis test (``tests/gateway/test_schemathesis.py``) and ``make fuzz`` run
:func:`positive_data_acceptance` instead of Schemathesis's own check of that name, so the one table
:data:`SCHEMA_INEXPRESSIBLE` decides what both accept.  An entry names the refusal exactly (the error's ``code``
and its ``field``), never an operation or a whole check, and says why the document cannot express the rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from schemathesis import Case, checks
from schemathesis.openapi.checks import RejectedPositiveData


@dataclass(frozen=True)
class Inexpressible:
    """A refusal of schema-valid input for a rule no JSON schema can state (``docs/input-policy.md``, "Rules no
    JSON schema can state"): the operations (their ``operationId``; ``*`` for every one), the error's ``code``,
    and patterns its ``field`` and ``message`` match in full, with the reason the document cannot say it."""

    operations: tuple[str, ...]
    code: str
    field: str
    message: str
    reason: str

    def matches(self, operation_id: str, error: dict[str, Any]) -> bool:
        field = error.get("field", error.get("param"))  # ``param``: the OpenAI-compatible routes' error shape
        return ((self.operations == ("*",) or operation_id in self.operations) and error.get("code") == self.code
                and re.fullmatch(self.field, str(field), re.DOTALL) is not None
                and re.fullmatch(self.message, str(error.get("message")), re.DOTALL) is not None)


_JSON_FIELDS = r"(config|settings|payload|metadata|properties|documents\[\d+\]\.metadata|entities\[\d+\]\.properties" \
               r"|relations\[\d+\]\.properties)"
_AGENT_REFERENCES = r"(agent|target|lead|agent_id|entities\[\d+\]\.agent|relations\[\d+\]\.agent)"

#: The one table of excused refusals, one entry per rule of ``docs/input-policy.md`` that answers 422 or 413 (a 404
#: or 409 is a response ``positive_data_acceptance`` already allows).  Any other refusal of data the schema allows
#: fails, and nothing else is excused anywhere.
SCHEMA_INEXPRESSIBLE = (
    Inexpressible(("*",), "invalid_input", r".*", r".*a lone surrogate.*",
                  "a JSON-schema pattern reads a string as UTF-16 code units, where every character outside the BMP "
                  "is a surrogate pair: no pattern refuses a lone surrogate without refusing every emoji"),
    Inexpressible(("agents.create", "agents.update"), "invalid_agent_key", r"agent_key", r".*shape of an ID.*",
                  "'not the shape of any ID' (every well-formed prefix, legacy forms, other products' IDs) is a "
                  "negation over the ID grammar, not a pattern the document can give"),
    Inexpressible(("*",), "invalid_agent_key", _AGENT_REFERENCES, r".*shape of an ID.*",
                  "an agent reference is an ID or a key, and a key-shaped value with the shape of an ID is refused "
                  "as a key: the same negation"),
    Inexpressible(("orgs.create",), "invalid_input", r"slug", r".*shape of an ID.*",
                  "a slug may not have the shape of an ID: the same negation"),
    Inexpressible(("*",), "invalid_cursor", r"cursor", r".*",
                  "a cursor is one the same list gave out to the same organization (signed): which strings those "
                  "are is state, not a format"),
    Inexpressible(("*",), "invalid_input", _JSON_FIELDS,
                  r".*(nested deeper than|KiB|bytes|NUL character|surrogate|outside 64 bits|not a finite number).*",
                  "a JSON object field is bounded in depth and stored size (no keyword exists), and its nested keys, "
                  "strings and integers follow the string and integer rules at any depth (a recursive schema for "
                  "every document); the description states them"),
    Inexpressible(("vault.upload",), "invalid_input", r"paths", r"\d+ files but \d+ paths.*",
                  "as many paths parts as files parts, in order: a count relation between two multipart fields"),
    Inexpressible(("vault.upload",), "payload_too_large", r"(file|files\[\d+\])", r".*",
                  "a multipart part's size (10 MiB a file, 50 MiB a request) is not a schema value"),
    Inexpressible(("vault.upload",), "invalid_input", r"(file|files\[\d+\])", r".* must be a file part: .*",
                  "a file is a form-data part with a filename; a part without one is text: the filename is the "
                  "part's Content-Disposition header, which the form's schema (its values) cannot require"),
    Inexpressible(("vault.upload",), "invalid_input", r"(file|files\[\d+\])", r"invalid content type of .*",
                  "a part's content type is a part header, not a form value"),
    Inexpressible(("memory.documents.upsert",), "invalid_input", r"documents\[\d+\]\.path", r".*",
                  "a batch names each (user_id, path) once: uniqueness over a pair of fields of array items"),
    Inexpressible(("links.create",), "invalid_input", r"target", r"an agent cannot be linked to itself.*",
                  "the body's target is not the agent of the path: a relation between a path parameter and a body "
                  "field, which no schema of either can state"),
    Inexpressible(("openai.chat.completions.create",), "invalid_input", r"messages",
                  r"the last message must be the user's message to the agent; .*",
                  "the last of the messages is the user's, with visible text: a rule on an array's last item, which "
                  "no keyword states (the earlier messages may be anything an OpenAI client sends)"),
    Inexpressible(("agents.model.set",), "invalid_input", r"credential", r"credential .* is not stored in this.*",
                  "the credential an agent's model names must be stored in the organization first: state, not a "
                  "format"),
    Inexpressible(("agents.model.set",), "invalid_input", r"base_url", r".* is not an http\(s\) URL with a host",
                  "a URL a request can be sent to (a host, a valid port, IPv6 brackets, IDNA) is the HTTP client's "
                  "grammar, not a pattern"),
    Inexpressible(("agents.embeddings.set",), "invalid_input", r"credential", r"credential .* is not stored in this.*",
                  "the credential an agent's embeddings name must be stored in the organization first: state, not a "
                  "format"),
    Inexpressible(("agents.embeddings.set",), "invalid_input", r"base_url", r".* is not an http\(s\) URL with a host",
                  "a URL a request can be sent to (a host, a valid port, IPv6 brackets, IDNA) is the HTTP client's "
                  "grammar, not a pattern"),
    Inexpressible(("agents.embeddings.get",), "invalid_input", r"config\.embeddings(\..*)?", r".*",
                  "the agent's stored configuration (written by agents.create or agents.update, whose config is any "
                  "JSON object) must be one a search can use: state, not the request's format"),
    Inexpressible(("mcp_servers.add",), "invalid_input", r"url", r".* is not an http\(s\) URL with a host.*",
                  "a URL a request can be sent to (a host, a valid port, IPv6 brackets, IDNA) is the HTTP client's "
                  "grammar, not a pattern"),
    Inexpressible(("mcp_servers.add",), "invalid_input", r"url",
                  r".*(not among this platform's allowed MCP commands|is not a command line).*",
                  "which command lines a stdio: server may be is the platform's setting (mcp.allowed_commands), "
                  "not a format"),
    Inexpressible(("mcp_servers.add",), "invalid_input", r"config\.(transport|credential|header)",
                  r".*(does not fit a stdio: URL|applies to the HTTP transports only).*",
                  "a stdio: server takes no transport, credential or header: a relation between the url field and "
                  "the config's members"),
    Inexpressible(("agents.model.get", "agents.model.check"), "invalid_input", r"config\.model(\..*)?", r".*",
                  "the agent's stored configuration (written by agents.create or agents.update, whose config is any "
                  "JSON object) must be one a run can use: state, not the request's format"),
    Inexpressible(("cron.create",), "invalid_input", r"schedule",
                  r".*(not a valid cron expression|is not in the future|does not give an ISO-8601|at most every 366).*",
                  "a schedule's shape is the document's pattern, but a cron field's range and names (croniter's "
                  "grammar), a real calendar date, a time after now and a bound on the number inside the text are not "
                  "patterns"),
    Inexpressible(("prices.put", "prices.delete"), "invalid_input", r"effective_from",
                  r".*expected an ISO-8601 time with its offset.*",
                  "a price's start is an ISO-8601 time with its UTC offset, parsed by the store; the document states "
                  "it in words, not as a pattern"),
    Inexpressible(("cron.create",), "invalid_input", r"timezone", r".*is not a known time zone.*",
                  "which time zone names exist is the server's IANA time-zone database, not a format"),
    Inexpressible(("cron.create",), "invalid_input", r"payload\.message", r".*",
                  "a payload's message, when it has one, is a string with something to say: a rule on one member of "
                  "a free JSON object"),
    Inexpressible(("cron.update",), "invalid_input", r"enabled", r".*one-shot time .* has passed.*",
                  "a one-shot job whose time has passed cannot be resumed: state, not the request's format"),
    Inexpressible(("memory.search",), "invalid_input", r"query", r".*got only blanks.*",
                  "a query is words to look for, not only blanks, and blanks are Python's str.isspace (Unicode "
                  "White_Space and U+001C-U+001F), which no JSON-schema \\s matches exactly"),
    Inexpressible(("knowledge.ingest",), "invalid_input", r"relations\[\d+\]\.(source|target)", r".*",
                  "a relation's index is below the number of entities and names an entity of the relation's own "
                  "agent: a relation between two arrays"),
)


def excused(case: Case, response: Any) -> Inexpressible | None:
    """The entry of :data:`SCHEMA_INEXPRESSIBLE` that explains this refusal, or ``None``."""
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(error, dict):
        return None
    operation_id = str(case.operation.definition.raw.get("operationId"))
    return next((rule for rule in SCHEMA_INEXPRESSIBLE if rule.matches(operation_id, error)), None)


def positive_data_acceptance(ctx: Any, response: Any, case: Case) -> bool | None:
    """Schemathesis's ``positive_data_acceptance``, except for the refusals :data:`SCHEMA_INEXPRESSIBLE` names."""
    try:
        return checks.positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        if excused(case, response) is None:
            raise
        return None


def ensure_resource_availability(ctx: Any, response: Any, case: Case) -> bool | None:
    """Schemathesis's ``ensure_resource_availability``, except for a 404 that names a *body* field: a request
    along a link (``PUT /v1/teams/{team_id}/lead`` after ``POST /v1/teams``) may name another thing that does
    not exist (the new lead agent), and the 404 says so by its field; the created resource, the path's, is there.
    A 404 naming a path parameter, or naming nothing, still fails."""
    if response.status_code == 404:
        try:
            field = response.json().get("error", {}).get("field")
        except ValueError:
            field = None
        if field is not None and field not in (case.path_parameters or {}):
            return None
    return checks.ensure_resource_availability(ctx, response, case)
