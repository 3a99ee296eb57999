"""Model prices and the cost of usage: each call is costed with the price in effect at its own time, a new price
never rewrites history, usage with no price is of unknown cost (not zero), and another tenant's prices never
count.  Money is exact: integer micro-units stored, decimal text and Decimal out."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError
from agentfy.store.repos import prices, telemetry
from agentfy.store.repos.telemetry import UsageRecord
from tests.helpers.tenants import make_tenant
from tests.store.helpers import new_agent


def _call(db: Database, scope: Scope, agent: str, at: str, *, model: str = "gpt-x", provider: str | None = "openai",
          tokens: tuple[int, int] = (1_000, 500)) -> None:
    with db.transaction() as tx:
        telemetry.record_usage(tx, UsageRecord(model=model, input_tokens=tokens[0], output_tokens=tokens[1],
                                               tenant_id=scope.tenant_id, agent_id=agent, provider=provider,
                                               recorded_at=at))


def _price(db: Database, scope: Scope, effective_from: str, input_units: str, output_units: str, *,
           currency: str = "USD", model: str = "gpt-x") -> bool:
    with db.transaction() as tx:
        _, replaced = prices.put_price(tx, scope, provider="openai", model=model, effective_from=effective_from,
                                       currency=currency,
                                       input_micros_per_million=prices.micros_of(input_units, "input"),
                                       output_micros_per_million=prices.micros_of(output_units, "output"))
    return replaced


def _days(db: Database, scope: Scope) -> list[telemetry.UsageDay]:
    with db.transaction(write=False) as tx:
        return telemetry.usage_by_agent_day(tx, scope)


def test_each_call_is_costed_at_the_price_in_effect_at_its_own_time(db: Database) -> None:
    scope = make_tenant(db, "acme").scope
    agent = new_agent(db, scope, "bot").id
    _call(db, scope, agent, "2026-01-01T09:00:00.000000Z")  # before any price: unknown
    _price(db, scope, "2026-01-02T00:00:00Z", "2.50", "10")
    _call(db, scope, agent, "2026-01-02T09:00:00.000000Z")
    _call(db, scope, agent, "2026-01-03T09:00:00.000000Z")
    before = {row.day: row.cost for row in _days(db, scope)}
    # 1,000 prompt tokens at 2.50 and 500 completion tokens at 10 a million: 0.0025 + 0.005
    assert before == {"2026-01-01": None, "2026-01-02": Decimal("0.0075"), "2026-01-03": Decimal("0.0075")}

    _price(db, scope, "2026-01-03T00:00:00+01:00", "1", "1")  # 2026-01-02T23:00Z: from then on only
    after = {row.day: (row.cost, None if row.price is None else row.price.effective_from) for row in _days(db, scope)}
    assert after == {"2026-01-01": (None, None),
                     "2026-01-02": (Decimal("0.0075"), "2026-01-02T00:00:00.000000Z"),
                     "2026-01-03": (Decimal("0.0015"), "2026-01-02T23:00:00.000000Z")}


def test_a_day_that_straddles_a_price_change_has_a_group_per_price(db: Database) -> None:
    scope = make_tenant(db, "acme").scope
    agent = new_agent(db, scope, "bot").id
    _call(db, scope, agent, "2026-02-01T08:00:00.000000Z")
    _price(db, scope, "2026-02-01T12:00:00Z", "1", "2", currency="EUR")
    _call(db, scope, agent, "2026-02-01T13:00:00.000000Z")
    _call(db, scope, agent, "2026-02-01T14:00:00.000000Z")
    rows = _days(db, scope)
    assert [(row.calls, row.cost, None if row.price is None else row.price.currency) for row in rows] == [
        (1, None, None), (2, Decimal("0.004"), "EUR")]  # unknown first, on both engines


def test_unpriced_providers_and_models_stay_unknown(db: Database) -> None:
    scope = make_tenant(db, "acme").scope
    agent = new_agent(db, scope, "bot").id
    _price(db, scope, "2020-01-01T00:00:00Z", "1", "1")
    _call(db, scope, agent, "2026-01-01T00:00:00.000000Z", provider=None)  # provider not recorded
    _call(db, scope, agent, "2026-01-01T00:00:00.000000Z", provider="anthropic")  # another provider's model
    _call(db, scope, agent, "2026-01-01T00:00:00.000000Z", model="gpt-y")  # no price of this model
    assert {row.cost for row in _days(db, scope)} == {None}


def test_another_tenants_prices_never_cost_this_tenants_usage(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    agent = new_agent(db, acme, "bot").id
    _price(db, globex, "2020-01-01T00:00:00Z", "5", "5")
    _call(db, acme, agent, "2026-01-01T00:00:00.000000Z")
    assert [row.cost for row in _days(db, acme)] == [None]
    with db.transaction(write=False) as tx:
        assert prices.list_prices(tx, acme) == []
        assert [p.model for p in prices.list_prices(tx, globex)] == ["gpt-x"]
        with pytest.raises(NotFoundError):
            prices.delete_price(tx, acme, provider="openai", model="gpt-x", effective_from="2020-01-01T00:00:00Z")


def test_put_replaces_the_same_key_and_lists_newest_first(db: Database) -> None:
    scope = make_tenant(db, "acme").scope
    assert _price(db, scope, "2026-01-01T00:00:00Z", "1", "2") is False
    assert _price(db, scope, "2026-01-01T01:00:00+01:00", "3", "4") is True  # the same instant
    _price(db, scope, "2026-06-01T00:00:00Z", "0.000001", "0")
    _price(db, scope, "2026-01-01T00:00:00Z", "9", "9", model="not-used-by-any-agent")
    with db.transaction(write=False) as tx:
        listed = prices.list_prices(tx, scope)
        only = prices.list_prices(tx, scope, provider="openai", model="gpt-x")
    assert [(p.model, p.effective_from, p.input_micros_per_million, p.output_micros_per_million) for p in listed] == [
        ("gpt-x", "2026-06-01T00:00:00.000000Z", 1, 0), ("gpt-x", "2026-01-01T00:00:00.000000Z", 3_000_000, 4_000_000),
        ("not-used-by-any-agent", "2026-01-01T00:00:00.000000Z", 9_000_000, 9_000_000)]
    assert len(only) == 2
    with db.transaction() as tx:
        prices.delete_price(tx, scope, provider="openai", model="gpt-x", effective_from="2026-06-01T00:00:00Z")
        assert len(prices.list_prices(tx, scope)) == 2
        with pytest.raises(NotFoundError):
            prices.delete_price(tx, scope, provider="openai", model="gpt-x", effective_from="2026-06-01T00:00:00Z")


@pytest.mark.parametrize("currency", ["usd", "US", "EURO", "12A", "", None, "ÉUR"])
def test_a_currency_that_is_not_a_code_is_refused(db: Database, currency: object) -> None:
    scope = make_tenant(db, "acme").scope
    with db.transaction() as tx, pytest.raises(InvalidInputError) as refused:
        prices.put_price(tx, scope, provider="openai", model="m", effective_from="2026-01-01T00:00:00Z",
                         currency=currency, input_micros_per_million=1,  # type: ignore[arg-type]
                         output_micros_per_million=1)
    assert refused.value.field == "currency"


@pytest.mark.parametrize("text", ["-1", "-0.5", "1e3", "1.0000001", "2,50", "", " 1", "10000000", "NaN", "Infinity"])
def test_a_price_text_that_is_not_a_plain_amount_is_refused(text: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        prices.micros_of(text, "input_per_million")
    assert refused.value.field == "input_per_million"


@pytest.mark.parametrize("micros", [-1, 1.5, True, prices.PRICE_MAX_MICROS + 1])
def test_a_negative_or_non_integer_price_is_refused_by_the_store(db: Database, micros: object) -> None:
    scope = make_tenant(db, "acme").scope
    with db.transaction() as tx, pytest.raises(InvalidInputError) as refused:
        prices.put_price(tx, scope, provider="openai", model="m", effective_from="2026-01-01T00:00:00Z",
                         currency="USD", input_micros_per_million=1,
                         output_micros_per_million=micros)  # type: ignore[arg-type]
    assert refused.value.field == "output_micros_per_million"


@pytest.mark.parametrize("moment", ["2026-01-01", "2026-01-01T00:00:00", "yesterday", "", "2026-13-01T00:00:00Z"])
def test_a_time_without_an_offset_or_not_a_time_is_refused(db: Database, moment: str) -> None:
    scope = make_tenant(db, "acme").scope
    with db.transaction() as tx, pytest.raises(InvalidInputError) as refused:
        prices.put_price(tx, scope, provider="openai", model="m", effective_from=moment, currency="USD",
                         input_micros_per_million=1, output_micros_per_million=1)
    assert refused.value.field == "effective_from"


def test_the_price_table_is_bounded(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    scope = make_tenant(db, "acme").scope
    monkeypatch.setattr(prices, "PRICES_MAX", 2)
    _price(db, scope, "2026-01-01T00:00:00Z", "1", "1")
    _price(db, scope, "2026-01-02T00:00:00Z", "1", "1")
    assert _price(db, scope, "2026-01-02T00:00:00Z", "2", "2") is True  # replacing is always fine
    with pytest.raises(ConflictError):
        _price(db, scope, "2026-01-03T00:00:00Z", "1", "1")


def test_money_is_exact() -> None:
    assert prices.micros_of("2.50", "x") == 2_500_000 and prices.micros_of("0.000001", "x") == 1
    assert prices.decimal_text(2_500_000) == "2.5" and prices.decimal_text(0) == "0"
    assert prices.decimal_text(12_000_000) == "12"
    # a billion tokens at the highest price, and one token at the lowest: no float rounding either way
    assert prices.cost(10**9, 0, prices.PRICE_MAX_MICROS, 0) == Decimal(10**9)
    assert prices.plain(prices.cost(1, 0, 1, 0)) == "0.000000000001"
