"""The agent page's model, credential, channels and run state: what the agent talks to, where, and whether it is
working now.

* **Model** (admins: ``agents.model.*``): the form sets it with ``PUT /v1/agents/{id}/model`` (provider, server,
  model name, the credential's *name*, context window, longest answer) and **Check** calls it once (``POST
  …/model/check``).  The credential is chosen from the organization's (``GET /v1/credentials``, names only), or
  a new secret is stored first (``PUT /v1/credentials/{name}``) — never shown back: the field is a password
  input that is always empty.  What the form sends is what was typed: the API validates it, and its error (the
  field, the value, what it expected) is what the page shows.
* **Channels** (operators: ``channels.list``): the chat-platform bindings (``GET /v1/agents/{id}/channels``).
* **Run state**: whether a run is going now — first as the agent's heartbeat says (``POST …/heartbeat``), then
  live: the page's script (``static/agent.js``) subscribes through the console's WebSocket bridge and follows
  the agent's ``agent.run.started`` and ``agent.run.finished`` events.
"""

from __future__ import annotations

import re
from typing import Any, Final

from fastapi import APIRouter
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import ApiFailure, segment
from agentfy.gateway.console.layout import STATIC, error_box, esc, field, post_form, table
from agentfy.gateway.console.responses import redirect
from agentfy.gateway.console.screens.paths import agent_url
from agentfy.gateway.console.visit import Visit, checked_form, text_of, visit

router = APIRouter()
PROVIDERS: Final = ("offline", "openai", "anthropic")
_WHOLE_NUMBER: Final = re.compile(r"-?[0-9]{1,12}")


def _select(name: str, label: str, options: list[tuple[str, str]], selected: str) -> str:
    """A labelled ``<select>``: ``options`` are (value, text)."""
    items = "".join(f'<option value="{esc(value)}"{" selected" if value == selected else ""}>{esc(text)}</option>'
                    for value, text in options)
    return f'<label for="{esc(name)}">{esc(label)}</label><select id="{esc(name)}" name="{esc(name)}">{items}</select>'


def _text(value: object) -> str:
    return "" if value is None else str(value)


async def _current_model(current: Visit, agent_id: str) -> tuple[dict[str, Any], str]:
    """The agent's model as the API reads it, or nothing and the API's error (a stored one a run could not use)."""
    try:
        return await current.api.get(f"/agents/{segment(agent_id)}/model"), ""
    except ApiFailure as failure:
        if failure.status == 401:
            raise
        return {}, error_box(failure.status, failure.code, failure.message, field=failure.field,
                             value=failure.value)


async def _credential_names(current: Visit) -> list[str]:
    if not current.may("credentials.list"):
        return []
    found = await current.api.get("/credentials")
    return [str(item["name"]) for item in found["items"]]


async def model_section(current: Visit, agent: dict[str, Any]) -> str:
    """The model form and its check, for the roles that may set it (nothing otherwise)."""
    if not current.may("agents.model.get"):
        return ""
    model, problem = await _current_model(current, agent["id"])
    names = await _credential_names(current)
    chosen = _text(model.get("credential"))
    if chosen and chosen not in names:
        names.append(chosen)
    fields = (_select("provider", "Provider", [(p, p) for p in PROVIDERS], _text(model.get("provider")) or "offline")
              + field("base_url", "Server (base URL)", value=_text(model.get("base_url")),  # the API checks it
                      extra=' inputmode="url" placeholder="https://api.openai.com/v1" autocomplete="off"')
              + field("model", "Model name", value=_text(model.get("model")), extra=' autocomplete="off"')
              + _select("credential", "Credential", [("", "none")] + [(n, n) for n in names], chosen)
              + field("context_window", "Context window (tokens, optional)",
                      value=_text(model.get("context_window")), extra=' inputmode="numeric"')
              + field("max_tokens", "Longest answer (tokens, anthropic only, optional)",
                      value=_text(model.get("max_tokens")), extra=' inputmode="numeric"'))
    if current.may("credentials.put"):
        fields += ('<fieldset><legend>Or store a new credential</legend>'
                   + field("new_credential", "Credential name", extra=' autocomplete="off" placeholder="openai"')
                   + field("secret", "Secret (API key; stored encrypted, never shown again)", kind="password",
                           extra=' autocomplete="new-password"')
                   + "</fieldset>")
    parts = ['<section id="model-settings"><h2>Model</h2>', problem]
    if current.may("agents.model.set"):
        parts.append(post_form(agent_url(agent["id"], "/model"), current.viewer.csrf, fields, label="Save model",
                               extra=' id="model-form"'))
    if current.may("agents.model.check"):
        parts.append(post_form(agent_url(agent["id"], "/model/check"), current.viewer.csrf, "",
                               label="Check the model", extra=' id="model-check" class="inline"'))
    parts.append("</section>")
    return "".join(parts)


def _binding_row(binding: dict[str, Any]) -> list[str]:
    return [esc(binding["platform"]), esc(binding["name"]), f'<code>{esc(binding["webhook_path"])}</code>',
            esc(binding["created_at"])]


async def channels_section(current: Visit, agent: dict[str, Any]) -> str:
    """The agent's chat-platform bindings, for the roles that may list them."""
    if not current.may("channels.list"):
        return ""
    bindings = await current.api.get(f"/agents/{segment(agent['id'])}/channels")
    return "<h2>Channels</h2>" + table(("Platform", "Name", "Webhook path", "Since"),
                                       (_binding_row(binding) for binding in bindings), table_id="channels",
                                       empty="No chat platform is bound to this agent.")


async def run_state(current: Visit, agent: dict[str, Any]) -> str:
    """The run-state badge: the heartbeat's answer now, kept live by ``agent.js``."""
    running = False
    if current.may("agents.heartbeat"):
        running = bool((await current.api.post(f"/agents/{segment(agent['id'])}/heartbeat"))["running"])
    state, text = ("running", "Running") if running else ("idle", "Idle")
    return (f'<span id="run-state" class="badge" role="status" aria-live="polite" data-state="{state}" '
            f'data-agent-id="{esc(agent["id"])}" data-live="false">{text}</span>'
            f'<script src="{STATIC}/agent.js" defer></script>')


def _number(text: str) -> int | str | None:
    """A number field as typed: empty is absent, a whole number an int; anything else goes to the API as is, so
    its error names the field and the value."""
    text = text.strip()
    if not text:
        return None
    return int(text) if _WHOLE_NUMBER.fullmatch(text) else text


def model_body(form: FormData, credential: str | None) -> dict[str, Any]:
    """The ``PUT …/model`` body of the form: the fields typed (empty ones left out)."""
    body: dict[str, Any] = {"provider": text_of(form, "provider").strip() or "offline"}
    for name in ("base_url", "model"):
        if value := text_of(form, name).strip():
            body[name] = value
    if credential:
        body["credential"] = credential
    for name in ("context_window", "max_tokens"):
        if (number := _number(text_of(form, name))) is not None:
            body[name] = number
    return body


@router.post("/agents/{agent_id}/model")
async def set_model(request: Request, agent_id: str) -> Response:
    current = await visit(request)
    form = await checked_form(request, current.session)
    request.state.back = agent_url(agent_id)
    credential = text_of(form, "credential").strip()
    secret = text_of(form, "secret")
    done = "model"
    if secret:
        credential = text_of(form, "new_credential").strip() or credential
        if not credential:
            raise ApiFailure(422, "invalid_input", "name the credential to store the secret under",
                             field="new_credential")
        await current.api.call("PUT", f"/credentials/{segment(credential)}", json={"secret": secret})
        done = "credential"
    await current.api.call("PUT", f"/agents/{segment(agent_id)}/model", json=model_body(form, credential or None))
    return redirect(request, agent_url(agent_id, f"?done={done}"))


@router.post("/agents/{agent_id}/model/check")
async def check_model(request: Request, agent_id: str) -> Response:
    current = await visit(request)
    await checked_form(request, current.session)
    request.state.back = agent_url(agent_id)
    result = await current.api.post(f"/agents/{segment(agent_id)}/model/check")
    return redirect(request, agent_url(agent_id, f"?checked={int(result['latency_ms'])}"
                                                 f"&answered={segment(str(result['model']))}"))
