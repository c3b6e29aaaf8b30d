"""Helpers for speech-engine conformance tests: spoken PCM, colour frames, paced-free streaming."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from duplex_client.server.config import speech_available
from duplex_client.server.engine.colors import swatch_jpeg
from duplex_client.server.engine.tts import speech_pcm16
from tests.integration.server.wire import Wire, append, b64

#: Mark for tests that need the `server` extra.
needs_speech = pytest.mark.skipif(not speech_available(), reason="needs the server extra")

RATE = 16000
CHUNK = RATE * 2 // 5  # 200 ms of PCM16
INSTRUCTION = "tell me what color you see"
SERVER_VAD = {
    "type": "server_vad",
    "threshold": 0.5,
    "prefix_padding_ms": 300,
    "silence_duration_ms": 500,
    "interrupt_response": True,
}


def spoken(text: str, *, lead_ms: int = 400, tail_ms: int = 1200) -> bytes:
    """`text` as 16 kHz PCM16 with silence around it, cut to whole 200 ms appends."""
    pcm = speech_pcm16(text, RATE, lead_ms=lead_ms, tail_ms=tail_ms)
    return pcm + bytes(-len(pcm) % CHUNK)


def quiet(ms: int, level: float = 20.0) -> bytes:
    """Faint noise (far below speech), deterministic."""
    rng = np.random.default_rng(ms)
    return (rng.standard_normal(RATE * ms // 1000) * level).astype("<i2").tobytes()


def color_frame(name: str) -> str:
    """A base64 JPEG of one palette colour."""
    return b64(swatch_jpeg(name))


async def send_pcm(wire: Wire, pcm: bytes, prefix: str, frame_every: str | None = None) -> None:
    """Stream PCM in 200 ms appends; with `frame_every`, each unit-closing append carries it."""
    for i in range(0, len(pcm), CHUNK):
        n = i // CHUNK
        frames = [frame_every] if frame_every is not None and n % 5 == 4 else None
        await wire.send(append(pcm[i : i + CHUNK], event_id=f"{prefix}_{n}", frames=frames))


def transcripts(events: list[dict[str, Any]]) -> list[str]:
    """Final assistant transcripts, in order."""
    return [e["transcript"] for e in events if e["type"] == "response.output_audio_transcript.done"]


def of_type(events: list[dict[str, Any]], etype: str) -> list[dict[str, Any]]:
    """Events of one type, in order."""
    return [e for e in events if e["type"] == etype]
