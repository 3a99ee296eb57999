"""with_id_retry repeats the whole write on a primary-key collision only, at most five times in all."""

from __future__ import annotations

import asyncio

import pytest

from agentfy.ids import IdCollisionError, IdRetryExhaustedError, format_id, with_id_retry, with_id_retry_async
from tests.ids.sources import ReplaySource


class UniqueViolation(Exception):
    def __init__(self, constraint: str) -> None:
        super().__init__(f"duplicate key value violates unique constraint {constraint!r}")
        self.constraint = constraint


def collides_on_primary_key(error: BaseException) -> bool:
    return isinstance(error, UniqueViolation) and error.constraint == "agents_pkey"


def test_a_collision_repeats_the_whole_write_with_a_freshly_minted_id() -> None:
    # The same bytes twice mint the same ID twice: the second write collides, the third one gets through.
    stream = bytes(22) * 2 + bytes(range(22))
    source = ReplaySource(stream)
    table: set[str] = set()
    attempts: list[str] = []

    def insert() -> str:
        new_id = format_id("agent", source)
        attempts.append(new_id)
        if new_id in table:
            raise UniqueViolation("agents_pkey")
        table.add(new_id)
        return new_id

    first = with_id_retry(insert, is_collision=collides_on_primary_key)
    second = with_id_retry(insert, is_collision=collides_on_primary_key)
    assert first != second and len(attempts) == 3 and attempts[0] == attempts[1]


def test_gives_up_after_five_attempts_and_says_why() -> None:
    calls = 0

    def always_collides() -> None:
        nonlocal calls
        calls += 1
        raise IdCollisionError("agents.id")

    with pytest.raises(IdRetryExhaustedError, match="after 5 attempts") as caught:
        with_id_retry(always_collides)
    assert calls == 5
    assert isinstance(caught.value.__cause__, IdCollisionError)


def test_other_unique_violations_propagate_at_once() -> None:
    calls = 0

    def duplicate_key() -> None:
        nonlocal calls
        calls += 1
        raise UniqueViolation("agents_tenant_key_unique")

    with pytest.raises(UniqueViolation):
        with_id_retry(duplicate_key, is_collision=collides_on_primary_key)
    assert calls == 1


def test_any_other_error_propagates_at_once() -> None:
    calls = 0

    def broken() -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        with_id_retry(broken)
    assert calls == 1


def test_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        with_id_retry(lambda: None, attempts=0)


def test_async_variant_retries_and_gives_up_the_same_way() -> None:
    calls = 0

    async def collides_twice() -> int:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise IdCollisionError("agents.id")
        return calls

    assert asyncio.run(with_id_retry_async(collides_twice)) == 3

    async def always() -> None:
        raise IdCollisionError("agents.id")

    with pytest.raises(IdRetryExhaustedError):
        asyncio.run(with_id_retry_async(always, attempts=2))
