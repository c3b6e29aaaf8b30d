"""`report_process`: a listening report built in a child process is the thread's, byte for byte,
and the run never loses it (the child's failures fall back to a thread)."""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from duplex_client.analysis.listener import ListenerModel
from duplex_client.analysis.turns import ResponseFacts
from duplex_client.media.errors import MediaWarning, collect_media_warnings
from duplex_client.run.listening_report import ListeningReport
from duplex_client.run.report_process import (
    ReportProcess,
    _answer,
    _unpack,
    build_report,
    report_process,
)

RATE = 24000

pytestmark = [
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in ("onnxruntime", "espeakng_loader", "av")),
        reason="needs the vad and server extras (voice activity on real speech)",
    )
]


@functools.cache
def spoken() -> NDArray[np.int16]:
    """Half a second of silence, a phrase (eSpeak NG, the server's TTS), then silence: 4 s."""
    from duplex_client.server.engine.tts import synthesize

    phrase = synthesize("please tell me the color", 16000).samples[: 16000 * 3]
    pcm = np.zeros(16000 * 4, np.int16)
    pcm[8000 : 8000 + len(phrase)] = phrase
    return pcm


def arguments(out_dir: Path) -> dict[str, Any]:
    """The spoken input (voice activity finds its end) and one answer heard after it."""
    model = ListenerModel(RATE)
    model.arrive("a", RATE // 2, 3600)
    model.end("a", 3600)
    return {
        "out_dir": out_dir,
        "sample_rate_hz": RATE,
        "media_end_ms": 4000,
        "sent": spoken(),
        "segments": model.segments(),
        "audio": {"a": np.full(RATE // 2, 1234, dtype="<i2").tobytes()},
        "spans": model.spans(),
        "responses": [ResponseFacts("a", 1, 3500.0, 3600.0, 500.0, "hi")],
        "timings": [],
        "events": [],
        "unit_sent_ms": {1: 3490.0},
        "annotations": None,
    }


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


async def test_the_child_builds_the_threads_report_and_files(tmp_path: Path) -> None:
    here, there = tmp_path / "thread", tmp_path / "child"
    here.mkdir()
    there.mkdir()
    expected = ListeningReport.build(**arguments(here))
    assert expected.metrics["user_end_source"] == "vad" and expected.user_speech
    async with report_process() as process:
        assert all(p.warm for p in process.processes)  # ready before any session starts
        got = await build_report(**arguments(there))
    assert (process.built, process.fell_back) == (1, 0)
    assert process.cpu_s() > 0  # what the child spent (the eval's own load, not others')
    assert got == expected
    assert files(there) == files(here) and set(files(here)) == {"heard.wav", "conversation.wav"}


async def test_reports_asked_at_once_come_back_each_to_its_run(tmp_path: Path) -> None:
    outs = [tmp_path / str(i) for i in range(4)]
    for out in outs:
        out.mkdir()
    asks = [arguments(out) for out in outs]
    for i, ask in enumerate(asks):  # each its own answer, so a swapped reply would show
        ask["responses"] = [ResponseFacts("a", 1, 3500.0, 3600.0, 500.0, f"answer {i}")]
    async with report_process(workers=2) as pool:
        reports = await asyncio.gather(*(build_report(**ask) for ask in asks))
    assert pool.built == 4 and all(p.built for p in pool.processes)  # both children took some
    assert [r.turns[0].transcript for r in reports] == [f"answer {i}" for i in range(4)]


async def test_the_builds_own_failure_is_raised_as_a_threads_would_be(tmp_path: Path) -> None:
    async with report_process() as process:
        with pytest.raises(FileNotFoundError):
            await build_report(**arguments(tmp_path / "missing"))
    assert (process.built, process.fell_back) == (1, 0)


async def test_a_child_that_died_leaves_the_builds_to_threads(tmp_path: Path) -> None:
    process = ReportProcess()
    await process.start()
    try:
        assert process._proc is not None
        os.kill(process._proc.pid, signal.SIGKILL)
        await process._proc.wait()
        report = await process.build(**arguments(tmp_path))
    finally:
        await process.close()
    assert process.broken and (process.built, process.fell_back) == (0, 1)
    assert report.turns and (tmp_path / "heard.wav").exists()


async def test_outside_report_process_the_build_runs_in_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def no_child(self: ReportProcess) -> None:
        raise AssertionError("no child process outside report_process()")

    monkeypatch.setattr(ReportProcess, "start", no_child)
    report = await build_report(**arguments(tmp_path))
    assert report.turns and (tmp_path / "conversation.wav").exists()


def test_the_childs_media_warnings_are_said_in_the_run() -> None:
    said: list[MediaWarning] = []
    with collect_media_warnings(said.append):
        report = _unpack(("ok", ListeningReport(), ["clip.wav: truncated"]))
    assert report == ListeningReport() and [str(w) for w in said] == ["clip.wav: truncated"]


def test_an_exception_that_cannot_travel_comes_back_as_its_line(tmp_path: Path) -> None:
    class Odd(Exception):
        def __init__(self, a: int, b: int) -> None:
            super().__init__(f"{a}/{b}")

    def fail(**kwargs: Any) -> ListeningReport:
        raise Odd(1, 2)

    original = ListeningReport.build
    ListeningReport.build = fail  # type: ignore[method-assign,assignment]
    try:
        kind, exc, _ = _answer({})
    finally:
        ListeningReport.build = original  # type: ignore[method-assign]
    assert kind == "error" and isinstance(exc, RuntimeError) and str(exc) == "Odd: 1/2"
