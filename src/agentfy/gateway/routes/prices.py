"""``/v1/prices``: the organization's price table — what a million prompt and completion tokens of a provider's
model cost from a given time on — for admins: put (add or replace), list, delete.

``GET /v1/usage`` costs each model call with the price of its provider and model in effect at the call's own
time (:mod:`agentfy.store.repos.prices`), so a new price applies from its ``effective_from`` on and never changes
what earlier calls cost; calls with no price in effect have an unknown cost (``null``), never zero.  A price is
decimal text of its currency's units per million tokens (``"2.50"``; at most six decimals, never negative, never
a JSON number: money is not floating point) and is stored as integer micro-units, answered as both.
``currency`` is an ISO 4217 code (``USD``).  A model no agent uses yet may be priced.  A price is named by
(``provider``, ``model``, ``effective_from``): putting the same key again replaces it; deleting it takes the
same three as query parameters.  Another organization's prices are never listed, replaced or deleted.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, get_args

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, Field, JsonValue

from agentfy.gateway.deps import Authenticated
from agentfy.gateway.errors import fields_as_sent
from agentfy.gateway.routes.schemas import Strict, text_field
from agentfy.gateway.routing import ApiRoute
from agentfy.runtime.providers import PROVIDERS
from agentfy.store.inputs import TEXT_PATTERN
from agentfy.store.repos import prices
from agentfy.store.repos.prices import Price

router = APIRouter(tags=["prices"], route_class=ApiRoute)

Provider = Literal["offline", "openai", "anthropic"]
assert set(get_args(Provider)) == set(PROVIDERS), "the providers a price names are the runtime's"
TIME_MAX_LENGTH: Final = 40
_PRICE_TEXT: Final[dict[str, JsonValue]] = {"pattern": prices.PRICE_PATTERN, "examples": ["2.50"]}
_TIME: Final = "An ISO-8601 time with its UTC offset, e.g. 2026-12-01T00:00:00Z."


def price_text(description: str) -> Any:
    return Field(min_length=1, max_length=14, description=description, json_schema_extra=_PRICE_TEXT)


class PriceIn(Strict):
    provider: Provider = Field(description="The provider the usage names.")
    model: str = text_field(prices.MODEL_MAX_LENGTH, description="The model's name as the usage names it (an "
                                                                  "agent's config.model.model).")
    effective_from: str = text_field(TIME_MAX_LENGTH, description=f"From when on the price applies. {_TIME}")
    currency: str = Field(min_length=3, max_length=3, pattern=prices.CURRENCY_PATTERN,
                          description="ISO 4217 code, three upper-case letters (USD, EUR).")
    input_per_million: str = price_text("What a million prompt tokens cost, in units of the currency (decimal "
                                        "text, at most six decimals).")
    output_per_million: str = price_text("What a million completion tokens cost, likewise.")


class PriceOut(BaseModel):
    provider: str
    model: str
    effective_from: str = Field(description="UTC, the store's format.")
    currency: str
    input_per_million: str = Field(description="Decimal text of units of the currency.")
    output_per_million: str
    input_micros_per_million: int = Field(description="The same price in micro-units (millionths) of the currency.")
    output_micros_per_million: int
    created_at: str
    replaced: bool | None = Field(default=None, description="In the answer to a PUT: whether a price of the same "
                                                            "key was replaced (true) or added (false).")


class PriceList(BaseModel):
    items: list[PriceOut] = Field(description=f"By provider and model, the newest effective_from first; at most "
                                              f"{prices.PRICES_MAX}.")


def price_out(price: Price) -> PriceOut:
    return PriceOut(provider=price.provider, model=price.model, effective_from=price.effective_from,
                    currency=price.currency, input_per_million=prices.decimal_text(price.input_micros_per_million),
                    output_per_million=prices.decimal_text(price.output_micros_per_million),
                    input_micros_per_million=price.input_micros_per_million,
                    output_micros_per_million=price.output_micros_per_million, created_at=price.created_at)


@router.put("/prices", operation_id="prices.put", response_model=PriceOut)
def put_price(body: PriceIn, call: Authenticated) -> PriceOut:
    """Add the price of a provider's model from ``effective_from`` on, or replace the one of that key (admin or
    higher): usage from then on is costed with it, earlier usage keeps its price."""
    with fields_as_sent(input_micros_per_million="input_per_million",
                        output_micros_per_million="output_per_million"):
        input_micros = prices.micros_of(body.input_per_million, "input_per_million")
        output_micros = prices.micros_of(body.output_per_million, "output_per_million")
        with call.gateway.db.transaction() as tx:
            price, replaced = prices.put_price(tx, call.who.scope, provider=body.provider, model=body.model,
                                               effective_from=body.effective_from, currency=body.currency,
                                               input_micros_per_million=input_micros,
                                               output_micros_per_million=output_micros)
    return price_out(price).model_copy(update={"replaced": replaced})


ProviderQuery = Annotated[Provider | None, Query(description="Only this provider's prices.")]
ModelQuery = Annotated[str | None, Query(min_length=1, max_length=prices.MODEL_MAX_LENGTH,
                                         json_schema_extra={"pattern": TEXT_PATTERN},
                                         description="Only this model's prices.")]


@router.get("/prices", operation_id="prices.list", response_model=PriceList)
def list_prices(call: Authenticated, *, provider: ProviderQuery = None, model: ModelQuery = None) -> PriceList:
    """The organization's prices (admin or higher), every ``effective_from`` of each model."""
    with call.gateway.db.transaction(write=False) as tx:
        found = prices.list_prices(tx, call.who.scope, provider=provider, model=model)
    return PriceList(items=[price_out(price) for price in found])


@router.delete("/prices", operation_id="prices.delete", status_code=204, response_class=Response)
def delete_price(call: Authenticated, *,
                 provider: Annotated[Provider, Query(description="The price's provider.")],
                 model: Annotated[str, Query(min_length=1, max_length=prices.MODEL_MAX_LENGTH,
                                             json_schema_extra={"pattern": TEXT_PATTERN},
                                             description="The price's model.")],
                 effective_from: Annotated[str, Query(min_length=1, max_length=TIME_MAX_LENGTH,
                                                      json_schema_extra={"pattern": TEXT_PATTERN},
                                                      description=f"The price's effective_from. {_TIME}")]) -> Response:
    """Delete one price (admin or higher): the usage it costed is costed by the price before it, or becomes of
    unknown cost. No such price in the organization: 404."""
    with call.gateway.db.transaction() as tx:
        prices.delete_price(tx, call.who.scope, provider=provider, model=model, effective_from=effective_from)
    return Response(status_code=204)
