"""The schedule of a cron job: one grammar, parsed and validated here for the HTTP route, the CLI, the agent's
``create_cron`` tool (all through the cron repository) and the scheduler.

A schedule is one of three kinds (:data:`GRAMMAR` is the sentence every error repeats):

* **cron** — five fields, ``minute hour day-of-month month day-of-week`` (``0 9 * * 1-5``), read by
  ``croniter`` in the job's time zone (an IANA name, ``Europe/Berlin``; ``UTC`` by default), so ``0 9 * * *``
  is 09:00 on the wall clock of that zone on both sides of a daylight-saving change.  The nicknames
  ``@yearly`` (``@annually``), ``@monthly``, ``@weekly``, ``@daily`` (``@midnight``) and ``@hourly`` stand for
  their five fields.  Six fields (seconds) and ``@reboot`` are refused: a job fires at most once a minute on
  a cron schedule; sub-minute work is an interval.
* **interval** — ``every <N><unit>``, unit ``s``, ``m``, ``h`` or ``d`` (``every 30s``, ``every 5m``), from
  1 second to 366 days; ``@every 30s``, as Go's cron libraries write it, means the same.  Its slots are
  the creation time plus whole intervals, so the cadence does not drift by how long a run took.
* **one-shot** — ``at <ISO-8601 date and time with an offset>`` (``at 2026-12-24T09:00:00+01:00``, or
  ``…Z``); without an offset the instant would depend on the server's zone, so it is refused.  The time
  must be in the future when the job is created; the job disables itself once it fired.

Times cross this module's boundary as aware :class:`~datetime.datetime` values and are stored by the caller
as UTC text.  Every problem is a :class:`ScheduleError` naming the field (``schedule`` or ``timezone``),
the value and what was expected.
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

from croniter import croniter

#: What a schedule may be, in one sentence (every schedule error ends with it).
GRAMMAR: Final = ("a five-field cron expression such as '0 9 * * 1-5' (or @hourly, @daily, @weekly, @monthly, "
                  "@yearly), an interval 'every <N><s|m|h|d>' such as 'every 30s', or a one-shot time "
                  "'at <ISO-8601 with offset>' such as 'at 2026-12-24T09:00:00+01:00'")
TIMEZONE_EXPECTED: Final = "an IANA time zone name such as 'UTC' or 'Europe/Berlin'"
DEFAULT_TIMEZONE: Final = "UTC"
SCHEDULE_MAX_LENGTH: Final = 200
TIMEZONE_MAX_LENGTH: Final = 64
INTERVAL_MIN: Final = timedelta(seconds=1)
INTERVAL_MAX: Final = timedelta(days=366)

Kind = Literal["cron", "interval", "once"]

_NICKNAMES: Final = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                     "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
                     "@hourly": "0 * * * *"}
#: The shape of every schedule, as one anchored expression that Python's ``re`` and a JSON-schema ``pattern``
#: (ECMA-262) read alike: the API document states it, and the parser refuses what it does not match before
#: looking closer.  What it cannot state — a cron field's range, a real calendar date in the future, the
#: 366-day bound — the parser checks after it.
_CRON_FIELD_SHAPE: Final = r"[0-9A-Za-z*,/?#-]+"
_INSTANT_SHAPE: Final = (r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.][0-9]{1,6})?)?"
                         r"(?:Z|[+-][0-9]{2}:[0-9]{2})")
SCHEDULE_PATTERN: Final = (rf"^(?:@(?:yearly|annually|monthly|weekly|daily|midnight|hourly)"
                           rf"|@?every [1-9][0-9]{{0,8}}[smhd]|at {_INSTANT_SHAPE}"
                           rf"|{_CRON_FIELD_SHAPE}(?: +{_CRON_FIELD_SHAPE}){{4}})$")
#: The shape of an IANA time zone name (``UTC``, ``Europe/Berlin``, ``Etc/GMT+5``); which names exist is the
#: time-zone database's, checked by :func:`parse_timezone`.
TIMEZONE_PATTERN: Final = r"^[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+)*$"
_SCHEDULE: Final = re.compile(SCHEDULE_PATTERN)
_TIMEZONE: Final = re.compile(TIMEZONE_PATTERN)
_INTERVAL: Final = re.compile(r"@?every ([1-9][0-9]{0,8})([smhd])")
_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class ScheduleError(ValueError):
    """A schedule or time zone that cannot be used: ``field``, ``value`` and ``expected`` say which, what and
    what would do (the store turns it into its 422 ``invalid_input``)."""

    def __init__(self, message: str, *, field: str, value: object, expected: str) -> None:
        super().__init__(f"{message}; expected {expected}")
        self.field = field
        self.value = value
        self.expected = expected


@dataclass(frozen=True, slots=True)
class Schedule:
    """A parsed schedule: its ``kind``, the text as given, the time zone a cron expression is read in, and
    the parts each kind needs (``expression``, ``interval`` or ``at``)."""

    kind: Kind
    text: str
    timezone: str
    expression: str | None = None
    interval: timedelta | None = None
    at: datetime | None = None

    def first_run(self, now: datetime) -> datetime | None:
        """When a job created (or resumed) at ``now`` first fires: the next cron slot after ``now``, one interval
        after ``now``, or the one-shot time (``None`` once it has passed: nothing is left to fire)."""
        _aware(now)
        if self.kind == "cron":
            return self._next_cron(now)
        if self.kind == "interval":
            assert self.interval is not None
            return now + self.interval
        assert self.at is not None
        return self.at if self.at > now else None

    def next_run(self, due: datetime, now: datetime) -> datetime | None:
        """The slot after the run that was due at ``due``, claimed at ``now``: the first slot strictly after
        ``now`` (a job that missed slots while nothing ran fires once, not once per missed slot); ``None`` for
        a one-shot job (it fired)."""
        _aware(due)
        _aware(now)
        if self.kind == "cron":
            return self._next_cron(now)
        if self.kind == "interval":
            assert self.interval is not None
            base = min(due, now)
            return base + self.interval * ((now - base) // self.interval + 1)
        return None

    def _next_cron(self, after: datetime) -> datetime:
        assert self.expression is not None
        local = after.astimezone(_zone(self.timezone))
        following: datetime = croniter(self.expression, local).get_next(datetime)
        return following.astimezone(UTC)


def _aware(moment: datetime) -> None:
    if moment.tzinfo is None:
        raise ValueError(f"{moment!r} has no time zone; the schedule works on aware times")


@functools.cache
def _zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones()) | {DEFAULT_TIMEZONE}


@functools.cache
def _zone(name: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(name)


def parse_timezone(value: object) -> str:
    """``value`` if it names an IANA time zone this machine knows, else :class:`ScheduleError` (field
    ``timezone``)."""
    if (not isinstance(value, str) or len(value) > TIMEZONE_MAX_LENGTH or _TIMEZONE.fullmatch(value) is None
            or value not in _zones()):
        raise ScheduleError(f"timezone {value!r} is not a known time zone", field="timezone", value=value,
                            expected=TIMEZONE_EXPECTED)
    return value


def parse_schedule(value: object, timezone: object = DEFAULT_TIMEZONE, *, now: datetime | None = None) -> Schedule:
    """The schedule ``value`` means in ``timezone`` (see the module docstring), or :class:`ScheduleError`.

    ``now`` given: a one-shot time must lie after it (a job being created); ``None``: any time is accepted
    (a stored job being read back)."""
    zone = parse_timezone(timezone)
    if not isinstance(value, str) or not value or len(value) > SCHEDULE_MAX_LENGTH:
        raise _bad(value, f"schedule {value!r} is empty or longer than {SCHEDULE_MAX_LENGTH} characters")
    text = value
    if text.startswith(("every", "@every")):
        return _interval(value, text, zone)
    if text.startswith("at "):
        return _once(value, text[3:], zone, now)
    if text.startswith("@") and text not in _NICKNAMES:
        raise _bad(value, f"schedule {value!r} is not a known nickname")
    if _SCHEDULE.fullmatch(text) is None:
        fields = len(text.split())
        raise _bad(value, f"schedule {value!r} has {fields} fields; a cron expression has five" if fields != 5 else
                   f"schedule {value!r} is not five fields of digits, names and * , - / ? L W # separated by spaces")
    return _cron(value, _NICKNAMES.get(text, text), zone)


def _bad(value: object, message: str) -> ScheduleError:
    return ScheduleError(message, field="schedule", value=value, expected=GRAMMAR)


def _interval(value: str, text: str, zone: str) -> Schedule:
    match = _INTERVAL.fullmatch(text)
    if match is None:
        raise _bad(value, f"schedule {value!r} is not an interval 'every <N><unit>' with a unit of s, m, h or d")
    seconds = int(match[1]) * _UNITS[match[2]]
    interval = timedelta(seconds=seconds)
    if interval > INTERVAL_MAX:
        raise _bad(value, f"schedule {value!r} repeats every {seconds} seconds; at most every 366 days is allowed")
    return Schedule("interval", value, zone, interval=interval)


def _once(value: str, text: str, zone: str, now: datetime | None) -> Schedule:
    if _SCHEDULE.fullmatch(value) is None:
        raise _bad(value, f"schedule {value!r} does not give an ISO-8601 date and time with an offset after 'at' "
                   "(YYYY-MM-DDTHH:MM[:SS[.ffffff]] then Z or ±HH:MM)")
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise _bad(value, f"schedule {value!r} does not give an ISO-8601 date and time after 'at'") from None
    if at.tzinfo is None or at.utcoffset() is None:
        raise _bad(value, f"schedule {value!r} has no UTC offset (add +01:00, Z, …)")
    at = at.astimezone(UTC)
    if now is not None and at <= now:
        raise _bad(value, f"schedule {value!r} is not in the future (it is now {now.isoformat()})")
    return Schedule("once", value, zone, at=at)


def _cron(value: str, text: str, zone: str) -> Schedule:
    expression = " ".join(text.split())
    try:
        # croniter checks the ranges (minute 0-59, …) and the names when it builds the iterator.
        croniter(expression, datetime(2000, 1, 1, tzinfo=UTC))
    except (ValueError, KeyError) as error:
        raise _bad(value, f"schedule {value!r} is not a valid cron expression ({error})") from None
    return Schedule("cron", value, zone, expression=expression)


def utc_text(moment: datetime) -> str:
    """``moment`` as the store writes times: ISO-8601 UTC with microseconds and a ``Z``."""
    _aware(moment)
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def from_utc_text(text: str) -> datetime:
    """A time the store wrote (:func:`utc_text`) as an aware UTC datetime."""
    return datetime.fromisoformat(text.removesuffix("Z")).replace(tzinfo=UTC)
