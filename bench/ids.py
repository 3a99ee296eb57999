"""Benchmark of the ID module: minting and validation against the standard library's UUIDs.

Run: ``make bench`` (or ``.venv/bin/python -m bench.ids``).  Prints, from one process, each figure the median
of alternating rounds (``bench.harness``):

* minting: ``format_id("agent")`` vs ``uuid.uuid4()`` (goal: at least 2x) and vs ``str(uuid.uuid4())``;
* validation: ``is_id(value, "agent")``, ``is_canonical_id(value, "agent")`` and ``is_canonical_id(value)`` over
  distinct canonical IDs vs ``uuid.UUID(text)`` over distinct UUID strings (goal: at least 2.5x each); and the
  refusal path (a key such as ``agent-key-1``);
* bulk: minting 1,000,000 IDs into a list vs 1,000,000 ``uuid.uuid4()`` calls.

The exit status is 0 whether or not a goal is met: a benchmark reports, the test-suite judges.
"""

from __future__ import annotations

import uuid

from agentfy.ids import format_id, is_canonical_id, is_id
from bench.harness import compare, header
from bench.verdicts import report


# Every loop binds the function it measures to a local, so both sides pay the same call overhead.
def mint_ids(n: int) -> None:
    mint = format_id
    for _ in range(n):
        mint("agent")


def mint_uuids(n: int) -> None:
    uuid4 = uuid.uuid4
    for _ in range(n):
        uuid4()


def mint_uuid_strings(n: int) -> None:
    uuid4 = uuid.uuid4
    for _ in range(n):
        str(uuid4())


#: Rounds per comparison: more than the harness's default, because the medians of these sub-microsecond
#: loops move with every burst of load on a shared machine.
ROUNDS = 11
SAMPLE = 100_000
IDS = [format_id("agent") for _ in range(SAMPLE)]
UUIDS = [str(uuid.uuid4()) for _ in range(SAMPLE)]
KEYS = [f"agent-key-{i}" for i in range(SAMPLE)]


def validate_ids(n: int) -> None:
    check = is_id
    for value in IDS[:n]:
        check(value, "agent")


def check_canonical_ids(n: int) -> None:
    check = is_canonical_id
    for value in IDS[:n]:
        check(value, "agent")


def check_canonical_ids_any_prefix(n: int) -> None:
    check = is_canonical_id
    for value in IDS[:n]:
        check(value)


def refuse_keys(n: int) -> None:
    check = is_id
    for value in KEYS[:n]:
        check(value, "agent")


def parse_uuids(n: int) -> None:
    parse = uuid.UUID
    for value in UUIDS[:n]:
        parse(value)


def bulk_ids(n: int) -> None:
    mint = format_id
    ids = [mint("agent") for _ in range(n)]
    assert len(ids) == n


def bulk_uuids(n: int) -> None:
    uuid4 = uuid.uuid4
    ids = [uuid4() for _ in range(n)]
    assert len(ids) == n


def main() -> None:
    header("agentfy.ids: minting and validation vs the standard library's uuid")
    results = [
        compare("mint format_id('agent')", mint_ids, mint_uuids, n=100_000, rounds=ROUNDS,
                baseline_label="uuid.uuid4()", goal=2.0),
        compare("mint format_id('agent')", mint_ids, mint_uuid_strings, n=100_000, rounds=ROUNDS,
                baseline_label="str(uuid.uuid4())"),
        compare("validate is_id(id, 'agent')", validate_ids, parse_uuids, n=SAMPLE, rounds=ROUNDS,
                baseline_label="uuid.UUID(str)", goal=2.5),
        compare("is_canonical_id(id, 'agent')", check_canonical_ids, parse_uuids, n=SAMPLE, rounds=ROUNDS,
                baseline_label="uuid.UUID(str)", goal=2.5),
        compare("is_canonical_id(id)", check_canonical_ids_any_prefix, parse_uuids, n=SAMPLE, rounds=ROUNDS,
                baseline_label="uuid.UUID(str)", goal=2.5),
        compare("refuse is_id('agent-key-N', 'agent')", refuse_keys, parse_uuids, n=SAMPLE, rounds=ROUNDS,
                baseline_label="uuid.UUID(str)"),
        compare("bulk 1M format_id into a list", bulk_ids, bulk_uuids, n=1_000_000, rounds=3,
                baseline_label="1M uuid.uuid4()"),
    ]
    for result in results:
        report("ids", result)


if __name__ == "__main__":
    main()
