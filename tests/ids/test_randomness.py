"""The CSPRNG pool never hands the same bytes out twice: across threads, and across fork()."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from agentfy.ids import format_id
from agentfy.ids.randomness import OncePool, csprng

PER_WORKER = 50_000


def test_csprng_returns_fresh_bytes_of_the_asked_length() -> None:
    assert len(csprng(19)) == 19
    assert csprng(32) != csprng(32)


def test_eight_threads_mint_no_duplicate() -> None:
    results: list[list[str]] = [[] for _ in range(8)]
    start = threading.Barrier(8)

    def mint(slot: list[str]) -> None:
        start.wait()
        slot.extend(format_id("agent") for _ in range(PER_WORKER))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, to provoke races on the pool
    try:
        threads = [threading.Thread(target=mint, args=(slot,)) for slot in results]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    every = [i for slot in results for i in slot]
    assert len(every) == 8 * PER_WORKER
    assert len(set(every)) == len(every)


def test_pool_items_are_handed_out_once_under_thread_races() -> None:
    made = iter(range(10**9))
    pool = OncePool(lambda: [next(made) for _ in range(7)])  # tiny batches: many swaps under contention
    results: list[list[int]] = [[] for _ in range(8)]

    def take(slot: list[int]) -> None:
        slot.extend(pool.take() for _ in range(20_000))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=take, args=(slot,)) for slot in results]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    every = [i for slot in results for i in slot]
    assert len(set(every)) == len(every) == 8 * 20_000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() does not exist on this platform")
def test_four_forked_children_and_the_parent_mint_no_duplicate() -> None:
    format_id("agent")  # the parent holds a half-used batch that every child inherits
    with tempfile.TemporaryDirectory() as tmp:
        children = []
        for n in range(4):
            pid = os.fork()
            if pid == 0:  # child: mint, write, and leave without running the parent's cleanup
                try:
                    ids = "\n".join(format_id("agent") for _ in range(PER_WORKER))
                    Path(tmp, f"child-{n}").write_text(ids)
                finally:
                    os._exit(0)
            children.append(pid)
        parent = [format_id("agent") for _ in range(PER_WORKER)]
        for pid in children:
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
        every = parent + [i for n in range(4) for i in Path(tmp, f"child-{n}").read_text().split("\n")]
    assert len(every) == 5 * PER_WORKER
    assert len(set(every)) == len(every)
