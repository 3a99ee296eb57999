"""Operations, prices: what a million prompt and completion tokens of a provider's model cost the organization from a
given time on — the price table the Usage screen's costs come from; set (add or replace) one, delete one.

Each is the API's ``/v1/prices`` (``GET``, ``PUT``, ``DELETE``), which checks every value: a currency that is not
an ISO 4217 code, a negative price or one with more than six decimals comes back as the API's 422, naming the
field.  The time is a UTC date and time (the form's ``datetime-local``, read as UTC and sent with its ``Z``): a
price applies to usage from then on, never to earlier usage.  Prices are shown as the API gives them, decimal
text of the currency's units (no floating point anywhere).
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.layout import esc, field, post_form, table
from agentfy.gateway.console.screens.ops_forms import SCREEN, done, posted
from agentfy.gateway.console.visit import Visit, text_of
from agentfy.runtime.providers import PROVIDERS
from agentfy.store.db import now

router = APIRouter()
_NO_AUTOCOMPLETE: Final = ' autocomplete="off"'
_KEY: Final = ("provider", "model", "effective_from")


def as_utc(local: str) -> str:
    """A ``datetime-local`` value (``2026-12-01T09:30``) as the UTC time the API takes; anything else as typed
    (the API names what is wrong with it)."""
    text = local.strip()
    return text + ("Z" if len(text) in (16, 19) and text[10:11] == "T" else "")


def _hidden(name: str, value: str) -> str:
    return f'<input type="hidden" name="{esc(name)}" value="{esc(value)}">'


def _row(current: Visit, price: dict[str, Any]) -> list[str]:
    delete = "" if not current.may("prices.delete") else post_form(
        f"{SCREEN}/prices/delete", current.viewer.csrf, "".join(_hidden(key, str(price[key])) for key in _KEY),
        label="Delete", extra=f' class="inline danger" aria-label="Delete the price of {esc(price["model"])} from '
                              f'{esc(price["effective_from"])}"')
    return [esc(price["provider"]), f"<code>{esc(price['model'])}</code>", esc(price["effective_from"]),
            esc(price["currency"]), esc(price["input_per_million"]), esc(price["output_per_million"]), delete]


def _provider_select() -> str:
    options = "".join(f'<option value="{esc(p)}"{" selected" if p == "openai" else ""}>{esc(p)}</option>'
                      for p in PROVIDERS)
    return f'<label for="price_provider">Provider</label><select id="price_provider" name="provider">{options}</select>'


async def section(current: Visit) -> str:
    """The prices' part of the Operations screen (only for keys the access policy lets list them)."""
    if not current.may("prices.list"):
        return '<h2 id="prices-heading">Prices</h2><p>Reading and setting prices needs the admin role.</p>'
    found = await current.api.get("/prices")
    body = table(("Provider", "Model", "From (UTC)", "Currency", "Per million prompt tokens",
                  "Per million completion tokens", ""), (_row(current, p) for p in found["items"]),
                 table_id="prices", empty="No prices: usage is shown in tokens, its cost unknown.")
    if current.may("prices.put"):
        body += ("<h3>Set a price</h3>" + post_form(
            f"{SCREEN}/prices", current.viewer.csrf,
            _provider_select()
            + field("price_model", "Model (as the agent's model configuration names it)", required=True,
                    extra=_NO_AUTOCOMPLETE)
            + field("price_from", "From (UTC)", kind="datetime-local", value=now()[:16], required=True)
            + field("price_currency", "Currency (ISO 4217)", value="USD", required=True,
                    extra=' maxlength="3" autocomplete="off"')
            + field("price_input", "Per million prompt tokens (e.g. 2.50)", required=True,
                    extra=' inputmode="decimal" autocomplete="off"')
            + field("price_output", "Per million completion tokens", required=True,
                    extra=' inputmode="decimal" autocomplete="off"'),
            label="Set price", extra=' id="set-price"'))
    return ('<h2 id="prices-heading">Prices</h2><p class="meta">What the Usage screen costs each model call with: '
            "the price of its provider and model in effect at the call's time.</p>" + body)


@router.post("/operations/prices")
async def put(request: Request) -> Response:
    current, form = await posted(request)
    answer = await current.api.call("PUT", "/prices", json={
        "provider": text_of(form, "provider"), "model": text_of(form, "price_model").strip(),
        "effective_from": as_utc(text_of(form, "price_from")),
        "currency": text_of(form, "price_currency").strip(), "input_per_million": text_of(form, "price_input").strip(),
        "output_per_million": text_of(form, "price_output").strip()})
    return done(request, "price_replaced" if answer.get("replaced") else "price_set", "prices")


@router.post("/operations/prices/delete")
async def delete(request: Request) -> Response:
    current, form = await posted(request)
    await current.api.call("DELETE", "/prices", params={key: text_of(form, key) for key in _KEY})
    return done(request, "price_deleted", "prices")
