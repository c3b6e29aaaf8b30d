"""The sync facade's loop thread: a timed-out call is cancelled on the loop, never abandoned."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from duplex_client.client.sync import _LoopThread


def test_a_timed_out_call_is_cancelled_and_raises_timeout() -> None:
    runner = _LoopThread()
    cancelled: list[bool] = []

    async def forever() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    try:
        with pytest.raises(TimeoutError, match=r"0\.01 s"):
            runner.run(forever(), 0.01)
        assert cancelled == [True]  # stopped before run() returned, not left waiting
        assert runner.run(asyncio.sleep(0, "next"), 5) == "next"
    finally:
        runner.stop()


def test_an_outcome_reached_despite_the_cancel_is_returned_not_dropped() -> None:
    runner = _LoopThread()

    async def finishes_anyway() -> str:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()
        return "item"

    try:
        assert runner.run(finishes_anyway(), 0.01) == "item"
        with pytest.raises(TypeError):
            runner.run(object(), 1)  # type: ignore[arg-type]
    finally:
        runner.stop()
