"""memlab.asyncloop.LoopThread: a coroutine past its deadline is cancelled, and nothing handed to
the loop after it runs while it is still going."""

from __future__ import annotations

import asyncio
import time

import pytest

from memlab.asyncloop import LoopThread


def test_a_result_and_an_exception_come_back_to_the_caller():
    loop = LoopThread("test-loop")

    async def double(x):
        await asyncio.sleep(0)
        return 2 * x

    async def fail():
        raise ValueError("from the loop")

    assert loop.run(double(21), timeout=5) == 42
    with pytest.raises(ValueError, match="from the loop"):
        loop.run(fail(), timeout=5)
    loop.close()


def test_a_late_coroutine_is_cancelled_and_ends_before_the_next_one_starts():
    loop, events = LoopThread("test-loop"), []

    async def slow_add():
        events.append("slow: model call")
        time.sleep(1.0)  # a blocking model call holds the loop past the deadline
        events.append("slow: call returned")
        await asyncio.sleep(0)  # cancelled here
        events.append("slow: saved")  # never reached

    async def next_add():
        events.append("next")

    with pytest.raises(TimeoutError):
        loop.run(slow_add(), timeout=0.8)
    # run returned only once the late coroutine had stopped
    assert events == ["slow: model call", "slow: call returned"]
    loop.run(next_add(), timeout=5)
    time.sleep(0.1)
    assert events == ["slow: model call", "slow: call returned", "next"]
    loop.close()
