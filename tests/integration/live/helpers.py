"""Shared pieces for live-mode integration tests: WAVs, rows, waits and a session harness."""

from __future__ import annotations

import asyncio
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from duplex_client import DuplexClient, SessionConfig
from duplex_client.media.devices.mic import Microphone
from duplex_client.media.devices.player import Player
from duplex_client.run.controls import LiveControls
from duplex_client.run.sources.devices import LiveSession, TurnMode
from tests.unit.live.fakes import FakeInputStream, FakeOutputStream, FakeSoundDevice


def write_wav(path: Path, pcm: bytes, rate: int = 16000) -> Path:
    """A 16-bit mono WAV."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return path


def tone_pcm(ms: int, hz: float = 440.0, rate: int = 16000, amp: float = 0.3) -> bytes:
    """A sine tone as int16 PCM."""
    t = np.arange(rate * ms // 1000) / rate
    return (np.sin(2 * np.pi * hz * t) * amp * 32767).astype("<i2").tobytes()


def audio_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Timeline rows that carried captured (non-stand-in) audio."""
    return [r for r in rows if r["duration_ms"] > 0 and not r["fallback"]]


async def wait_for(pred: Callable[[], object], timeout: float = 5.0, what: str = "") -> None:
    """Poll `pred` until true (bounded)."""

    async def loop() -> None:
        while not pred():
            await asyncio.sleep(0.005)

    try:
        await asyncio.wait_for(loop(), timeout)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what or pred}") from None


class Harness:
    """A `LiveSession` over a real client with a hand-stepped fake microphone and speaker."""

    def __init__(
        self,
        url: str,
        *,
        config: SessionConfig,
        turn: TurnMode,
        mic_pcm: bytes = b"",
        echo_gate: bool = False,
        mic_rate: int = 16000,
    ) -> None:
        self.sd = FakeSoundDevice(pcm=mic_pcm, rate=mic_rate, pace=None)
        self.client = DuplexClient(url, model="m", config=config, ack_policy="manual")
        self.controls = LiveControls()
        self.player = Player(sd=self.sd, jitter_ms=0, hangover_ms=0)
        self.session = LiveSession(
            self.client,
            Microphone(sd=self.sd),
            player=self.player,
            turn=turn,
            controls=self.controls,
            echo_gate=echo_gate,
            stall_timeout_s=30,
        )
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Harness:
        await self.client.connect()
        self.task = asyncio.create_task(self.session.run())
        await wait_for(lambda: self.sd.inputs and self.sd.outputs, what="devices")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.controls.apply("quit")
        assert self.task is not None
        await asyncio.wait_for(self.task, 10)
        await self.client.close()

    @property
    def mic(self) -> FakeInputStream:
        return self.sd.inputs[0]

    @property
    def speaker(self) -> FakeOutputStream:
        return self.sd.outputs[0]

    async def feed(self, ms: int) -> None:
        """Capture `ms` of audio and wait until the session has framed it.

        (The microphone should run at the session's rate: a resampler holds back its lag.)
        """
        before = self.session.framer.media_samples if self.session.framer else 0
        self.mic.feed(ms)
        want = before + self.session.fmt.sample_rate_hz * ms // 1000
        await wait_for(
            lambda: self.session.framer is not None and self.session.framer.media_samples >= want,
            what=f"{ms} ms framed",
        )
        await asyncio.sleep(0.01)

    async def render(self, ms: int) -> None:
        """Play `ms` of output and let the ack task look at it."""
        self.speaker.render(ms)
        await asyncio.sleep(0.15)
