"""Media warnings: one clean line, and collected by a run instead of Python's warning display."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from duplex_client.media.errors import MediaWarning, collect_media_warnings, warn_media


def test_a_media_warning_is_one_line() -> None:
    w = MediaWarning("clip.mp4: audio unreadable after this point (Invalid data\n  found)")
    assert str(w) == "clip.mp4: audio unreadable after this point (Invalid data found)"


def test_without_a_collector_it_is_a_python_warning() -> None:
    with pytest.warns(MediaWarning, match="^x.mp4: truncated$"):
        warn_media(MediaWarning("x.mp4: truncated"))


def test_a_collector_takes_them_instead_also_in_tasks_it_starts() -> None:
    got: list[str] = []

    async def decode() -> None:
        warn_media(MediaWarning("x.mp4: truncated"))

    async def run() -> None:
        with collect_media_warnings(lambda w: got.append(str(w))):
            warn_media(MediaWarning("a.wav: short"))
            await asyncio.create_task(decode())
        with pytest.warns(MediaWarning):
            warn_media(MediaWarning("after: shown"))

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        asyncio.run(run())
    assert got == ["a.wav: short", "x.mp4: truncated"]
    assert [str(w.message) for w in shown] == []


async def test_two_runs_collect_their_own() -> None:
    a: list[str] = []
    b: list[str] = []

    async def one(sink: list[str], name: str) -> None:
        with collect_media_warnings(lambda w: sink.append(str(w))):
            await asyncio.sleep(0.01)
            warn_media(MediaWarning(name))
            await asyncio.sleep(0.01)

    await asyncio.gather(one(a, "a"), one(b, "b"))
    assert a == ["a"] and b == ["b"]
