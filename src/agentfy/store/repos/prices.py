"""The organization's price table: what a million prompt and completion tokens of a provider's model cost, from a
given time on — and the cost of usage at the price in effect when it happened.

A price is keyed by (provider, model, ``effective_from``) within the tenant: putting one with the same key
replaces it, and a new ``effective_from`` adds a price that applies from then on while earlier usage keeps the
earlier one (:mod:`agentfy.store.repos.telemetry` joins each usage snapshot to the price of its provider and model
with the latest ``effective_from`` at or before its own ``recorded_at``).  Usage with no such price has an
unknown cost, never zero.

Money is never floating point: a price is an integer of micro-units (millionths) of its ``currency`` per million
tokens (``3.00`` a million tokens is ``3_000_000``); :func:`micros_of` and :func:`decimal_text` convert the decimal
text a person writes, and :func:`cost` is exact (:class:`~decimal.Decimal`).  ``currency`` is an ISO 4217 code
(three upper-case letters).  ``effective_from`` is any ISO-8601 time with its offset, stored in the store's own
UTC format so that it compares as text with ``recorded_at``.  Every read and write takes the tenant's ``Scope``:
another organization's prices are never seen, replaced or deleted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import Scope
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError
from agentfy.store.inputs import check_text
from agentfy.store.schema import model_prices

PROVIDER_MAX_LENGTH: Final = 50
MODEL_MAX_LENGTH: Final = 200
#: Micro-units in one unit of a currency.
MICROS: Final = 1_000_000
#: The highest price of a million tokens, in units (a million of the currency): far above any model's, and it
#: keeps ``tokens x price`` well inside what both engines add up exactly.
PRICE_MAX_UNITS: Final = 1_000_000
PRICE_MAX_MICROS: Final = PRICE_MAX_UNITS * MICROS
#: A price as a person writes it: a whole number of units and at most six decimals, no sign, no exponent.
PRICE_PATTERN: Final = r"^[0-9]{1,7}(?:\.[0-9]{1,6})?$"
CURRENCY_PATTERN: Final = r"^[A-Z]{3}$"
#: The most prices one organization keeps (a list answer is all of them).
PRICES_MAX: Final = 1_000
_PRICE_SHAPE: Final = re.compile(PRICE_PATTERN)
_CURRENCY_SHAPE: Final = re.compile(CURRENCY_PATTERN)

_c = model_prices.c
_KEY: Final = (_c.tenant_id == sa.bindparam("tenant_id"), _c.provider == sa.bindparam("provider"),
               _c.model == sa.bindparam("model"), _c.effective_from == sa.bindparam("effective_from"))
_COLUMNS: Final = (_c.provider, _c.model, _c.effective_from, _c.currency, _c.input_micros_per_million,
                   _c.output_micros_per_million, _c.created_at)
_ONE: Final = sa.select(*_COLUMNS).where(*_KEY)
_COUNT: Final = sa.select(sa.func.count()).select_from(model_prices).where(_c.tenant_id == sa.bindparam("tenant_id"))
_INSERT: Final = sa.insert(model_prices).values({name: sa.bindparam(name) for name in (
    "tenant_id", "provider", "model", "effective_from", "currency", "input_micros_per_million",
    "output_micros_per_million", "created_at")})
_UPDATE: Final = sa.update(model_prices).where(*_KEY).values(
    currency=sa.bindparam("currency"), input_micros_per_million=sa.bindparam("input_micros_per_million"),
    output_micros_per_million=sa.bindparam("output_micros_per_million"))
_DELETE: Final = sa.delete(model_prices).where(*_KEY)


def _list(by_provider: bool, by_model: bool) -> sa.Select[Any]:
    where = [_c.tenant_id == sa.bindparam("tenant_id")]
    if by_provider:
        where.append(_c.provider == sa.bindparam("provider"))
    if by_model:
        where.append(_c.model == sa.bindparam("model"))
    return sa.select(*_COLUMNS).where(*where).order_by(_c.provider, _c.model, _c.effective_from.desc())


#: The list's four statements (whole or narrowed by provider, model, both), each compiled once.
_LISTS: Final = {(p, m): _list(p, m) for p in (False, True) for m in (False, True)}


@dataclass(frozen=True, slots=True)
class Price:
    """One price: a million prompt (``input``) and completion (``output``) tokens of ``provider``'s ``model``
    cost these micro-units of ``currency``, for usage recorded at or after ``effective_from``."""

    provider: str
    model: str
    effective_from: str
    currency: str
    input_micros_per_million: int
    output_micros_per_million: int
    created_at: str


def _price(row: Any) -> Price:
    return Price(row[0], row[1], row[2], row[3], int(row[4]), int(row[5]), row[6])


def micros_of(text: object, field: str) -> int:
    """The micro-units of a price written as decimal text (``"2.50"``), or :class:`InvalidInputError` naming
    ``field``: a negative number, a float's exponent, more than six decimals or more than
    :data:`PRICE_MAX_UNITS` is refused."""
    if type(text) is not str or not _PRICE_SHAPE.fullmatch(text):
        raise InvalidInputError(f"invalid {field} {text!r}: expected a price per million tokens, a decimal number "
                                ">= 0 with at most six decimals (e.g. 2.50)", field=field, value=text)
    micros = int(Decimal(text).scaleb(6))
    return check_micros(micros, field)


def check_micros(value: object, field: str) -> int:
    """``value`` if it is an integer of micro-units from 0 to :data:`PRICE_MAX_MICROS`."""
    if type(value) is not int or not 0 <= value <= PRICE_MAX_MICROS:
        raise InvalidInputError(f"invalid {field} {value!r}: expected a price from 0 to {PRICE_MAX_UNITS} per "
                                "million tokens", field=field, value=value)
    return value


def decimal_text(micros: int) -> str:
    """Micro-units as the decimal text of units, without trailing zeros (``2_500_000`` is ``"2.5"``)."""
    return plain(Decimal(micros).scaleb(-6))


def plain(amount: Decimal) -> str:
    """An amount as plain decimal text: no exponent, no trailing zeros (``0.003702``, ``12``)."""
    text = format(amount.normalize(), "f")
    return "0" if text in ("-0", "") else text


def check_currency(value: object) -> str:
    if type(value) is not str or not _CURRENCY_SHAPE.fullmatch(value):
        raise InvalidInputError(f"invalid currency {value!r}: expected an ISO 4217 code, three upper-case letters "
                                "(e.g. USD, EUR)", field="currency", value=value)
    return value


def effective_time(value: object, field: str = "effective_from") -> str:
    """An ISO-8601 time with its UTC offset (``2026-12-01T00:00:00Z``, ``…+01:00``) in the store's format (UTC,
    microseconds, ``Z``), or :class:`InvalidInputError`: a time without an offset would be read in some
    machine's zone."""
    if type(value) is str and len(value) <= 40:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is not None:
            return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    raise InvalidInputError(f"invalid {field} {value!r}: expected an ISO-8601 time with its offset, e.g. "
                            "2026-12-01T00:00:00Z", field=field, value=value)


def _key(scope: Scope, provider: object, model: object, effective_from: object) -> dict[str, Any]:
    return {"tenant_id": scope.tenant_id,
            "provider": check_text(provider, "provider", max_length=PROVIDER_MAX_LENGTH),
            "model": check_text(model, "model", max_length=MODEL_MAX_LENGTH),
            "effective_from": effective_time(effective_from)}


def put_price(tx: Tx, scope: Scope, *, provider: str, model: str, effective_from: str, currency: str,
              input_micros_per_million: int, output_micros_per_million: int) -> tuple[Price, bool]:
    """Store the price of ``provider``'s ``model`` from ``effective_from`` on, replacing the one of the same key;
    returns it and whether it replaced one.  A model no agent uses yet may be priced (it may be soon).  A new
    key past :data:`PRICES_MAX` is :class:`ConflictError`."""
    key = _key(scope, provider, model, effective_from)
    values = {"currency": check_currency(currency),
              "input_micros_per_million": check_micros(input_micros_per_million, "input_micros_per_million"),
              "output_micros_per_million": check_micros(output_micros_per_million, "output_micros_per_million")}
    replaced = tx.one(_ONE, key) is not None
    if replaced:
        tx.execute(_UPDATE, {**key, **values})
    else:
        if int(tx.scalar(_COUNT, {"tenant_id": scope.tenant_id}) or 0) >= PRICES_MAX:
            raise ConflictError(f"this organization has {PRICES_MAX} prices, the most it keeps: delete one first",
                                field="effective_from", value=key["effective_from"])
        tx.execute(_INSERT, {**key, **values, "created_at": now()})
    row = tx.one(_ONE, key)
    assert row is not None  # written just now, in this transaction
    return _price(row), replaced


def list_prices(tx: Tx, scope: Scope, *, provider: str | None = None, model: str | None = None) -> list[Price]:
    """The tenant's prices by provider and model, each model's newest ``effective_from`` first; ``provider`` and
    ``model`` narrow the list."""
    params: dict[str, Any] = {"tenant_id": scope.tenant_id}
    if provider is not None:
        params["provider"] = check_text(provider, "provider", max_length=PROVIDER_MAX_LENGTH)
    if model is not None:
        params["model"] = check_text(model, "model", max_length=MODEL_MAX_LENGTH)
    query = _LISTS[(provider is not None, model is not None)]
    return [_price(row) for row in tx.all(query, params)]


def delete_price(tx: Tx, scope: Scope, *, provider: str, model: str, effective_from: str) -> None:
    """Delete one price (usage it costed becomes costed by the price before it, or unknown);
    :class:`NotFoundError` when the tenant has no price of that key."""
    key = _key(scope, provider, model, effective_from)
    if tx.execute(_DELETE, key).rowcount == 0:
        raise NotFoundError("price", f"{key['provider']}/{key['model']} from {key['effective_from']}")


def cost(input_tokens: int, output_tokens: int, input_micros_per_million: int,
         output_micros_per_million: int) -> Decimal:
    """What these tokens cost at this price, exactly, in units of its currency."""
    total = input_tokens * input_micros_per_million + output_tokens * output_micros_per_million
    return Decimal(total).scaleb(-12)  # micro-units (1e-6) per million tokens (1e6)
