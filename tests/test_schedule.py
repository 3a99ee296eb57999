"""The schedule grammar: what is accepted, what each kind's next run is, and what a refusal says."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.schedule import GRAMMAR, SCHEDULE_PATTERN, ScheduleError, from_utc_text, parse_schedule, utc_text

NOW = datetime(2026, 12, 2, 6, 0, tzinfo=UTC)
moments = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC))


@pytest.mark.parametrize(("text", "kind"), [
    ("0 9 * * 1-5", "cron"), ("*/15 * * * *", "cron"), ("@daily", "cron"), ("every 30s", "interval"),
    ("@every 1h", "interval"), ("at 2027-01-01T09:00:00+01:00", "once"), ("at 2027-01-01T08:00:00Z", "once")])
def test_the_three_kinds_are_accepted(text: str, kind: str) -> None:
    assert parse_schedule(text, "Europe/Berlin", now=NOW).kind == kind


@pytest.mark.parametrize(("text", "timezone", "field"), [
    ("0 9 * *", "UTC", "schedule"), ("0 9 * * * *", "UTC", "schedule"), ("61 * * * *", "UTC", "schedule"),
    ("@reboot", "UTC", "schedule"), ("every 0s", "UTC", "schedule"), ("every 5 minutes", "UTC", "schedule"),
    ("every 367d", "UTC", "schedule"), ("at 2027-01-01T09:00:00", "UTC", "schedule"),
    ("at 2020-01-01T09:00:00Z", "UTC", "schedule"), ("at tomorrow", "UTC", "schedule"), ("", "UTC", "schedule"),
    ("0 9 * * *", "Mars/Olympus", "timezone"), ("0 9 * * *", "../etc/passwd", "timezone"),
    ("0 9 * * *", "", "timezone"),
])
def test_a_refusal_names_the_field_the_value_and_what_was_expected(text: str, timezone: str, field: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_schedule(text, timezone, now=NOW)
    error = caught.value
    assert error.field == field
    assert error.value == (text if field == "schedule" else timezone)
    assert error.expected in str(error)
    assert field != "schedule" or error.expected == GRAMMAR


def test_a_cron_expression_is_read_on_the_wall_clock_of_its_time_zone_across_daylight_saving() -> None:
    berlin = parse_schedule("0 9 * * *", "Europe/Berlin")
    before = berlin.first_run(datetime(2026, 3, 28, 12, tzinfo=UTC))
    after = berlin.first_run(datetime(2026, 3, 29, 12, tzinfo=UTC))
    assert before == datetime(2026, 3, 29, 7, tzinfo=UTC)  # 09:00 CEST
    assert after == datetime(2026, 3, 30, 7, tzinfo=UTC)
    assert parse_schedule("0 9 * * *", "UTC").first_run(datetime(2026, 1, 5, 12, tzinfo=UTC)) == \
        datetime(2026, 1, 6, 9, tzinfo=UTC)


def test_after_downtime_the_next_slot_is_after_now_so_a_missed_job_runs_once() -> None:
    hourly = parse_schedule("0 * * * *")
    due = datetime(2026, 12, 1, 0, tzinfo=UTC)
    assert hourly.next_run(due, due + timedelta(hours=10, minutes=5)) == due + timedelta(hours=11)
    every = parse_schedule("every 5m")
    assert every.next_run(due, due + timedelta(minutes=23)) == due + timedelta(minutes=25)  # on the grid
    once = parse_schedule("at 2026-12-01T00:00:00Z")
    assert once.next_run(due, due + timedelta(days=1)) is None


@given(minute=st.integers(0, 59), hour=st.integers(0, 23), at=moments)
def test_a_cron_slot_is_always_after_now_and_on_the_expression(minute: int, hour: int, at: datetime) -> None:
    schedule = parse_schedule(f"{minute} {hour} * * *")
    following = schedule.first_run(at)
    assert following is not None and at < following <= at + timedelta(days=1)
    assert (following.minute, following.hour, following.second) == (minute, hour, 0)


@given(seconds=st.integers(1, 366 * 86400), due=moments, late=st.integers(0, 10**9))
def test_an_interval_slot_is_strictly_after_now_on_the_grid_within_one_interval(seconds: int, due: datetime,
                                                                                late: int) -> None:
    unit = next(u for u, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)) if seconds % size == 0)
    size = {"d": 86400, "h": 3600, "m": 60, "s": 1}[unit]
    schedule = parse_schedule(f"every {seconds // size}{unit}")
    now = due + timedelta(seconds=late)
    following = schedule.next_run(due, now)
    assert following is not None and now < following <= now + timedelta(seconds=seconds)
    assert (following - due) % timedelta(seconds=seconds) == timedelta(0)


@given(text=st.text(max_size=40))
def test_any_text_either_parses_or_is_refused_with_the_grammar(text: str) -> None:
    try:
        parse_schedule(text, now=NOW)
    except ScheduleError as error:
        assert error.field == "schedule" and error.value == text
    else:  # what the parser accepts, the API document's pattern allows
        assert re.fullmatch(SCHEDULE_PATTERN, text)


@given(text=st.from_regex(SCHEDULE_PATTERN, fullmatch=True))
def test_text_of_the_documented_shape_parses_or_is_refused_for_a_rule_beyond_the_shape(text: str) -> None:
    try:
        parse_schedule(text)
    except ScheduleError as error:
        assert any(reason in str(error) for reason in ("not a valid cron expression", "does not give an ISO-8601",
                                                       "at most every 366")), str(error)


@given(at=moments)
def test_stored_times_read_back_exactly(at: datetime) -> None:
    assert from_utc_text(utc_text(at)) == at
