"""The SDK, against the reference server on loopback, exposes upstream's fields (#20) typed."""

from __future__ import annotations

import asyncio
import math
import struct

from duplex_client import DuplexClient
from duplex_client.protocol import (
    InputAudioBufferCommitted,
    PlaybackAcknowledged,
    RateLimitsUpdated,
    ResponseAudioDelta,
    ResponseCreated,
    ResponseDone,
    ResponseSpeak,
    ServerEvent,
    SessionClosed,
)
from duplex_client.server import ReferenceServer, Script


def _tone(ms: int, rate: int = 16000) -> bytes:
    n = rate * ms // 1000
    return b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(n)
    )


async def test_sdk_reads_upstream_fields_typed() -> None:
    seen: list[ServerEvent] = []
    fast = Script.from_dict({"chunk_interval_ms": 0})
    async with ReferenceServer(engine="scripted", script=fast) as server:
        client = DuplexClient(server.url, model="m")
        client.add_listener(lambda event, *_: seen.append(event))
        async with client:
            caps = client.capabilities
            assert caps.supports_session_lease and caps.supports_audio_truncate
            assert caps.supports_client_commit and caps.input_modes == ("append_audio_chunk",)
            assert caps.signal_sources == ("client_event", "server_policy", "model_native")
            assert caps.target_barge_in_latency_ms == caps.chunk_period_ms
            assert client.session["turn_state"] == "idle"
            assert client.session["output_modalities"] == client.session["modalities"]
            await client.append_input(_tone(1200), is_speech=True)
            await client.commit()
            async with asyncio.timeout(10):
                while not any(isinstance(e, RateLimitsUpdated) for e in seen):
                    await asyncio.sleep(0.01)
            done = next(e for e in seen if isinstance(e, ResponseDone))
            await client.ack_playback(500, response_id=done.response_id or "")
            async with asyncio.timeout(10):
                while not any(isinstance(e, PlaybackAcknowledged) for e in seen):
                    await asyncio.sleep(0.01)
        closed = [e for e in seen if isinstance(e, SessionClosed)]
    committed = next(e for e in seen if isinstance(e, InputAudioBufferCommitted))
    assert committed.history_len == 1
    created = next(e for e in seen if isinstance(e, ResponseCreated))
    assert created.duplex_event["response_id"] == created.response_id
    speak = next(e for e in seen if isinstance(e, ResponseSpeak))
    assert speak.model_speak is True and speak.content_index == 0
    deltas = [e for e in seen if isinstance(e, ResponseAudioDelta)]
    assert deltas and all(d.model_speak for d in deltas)
    ends = [d.audio_text_marks[-1].audio_end_ms for d in deltas]
    assert ends == sorted(ends) and ends[-1] == done.metadata["audio_duration_ms"]
    assert done.committed is True and done.playback is not None
    assert done.playback.generated_ms == ends[-1]
    acks = [e for e in seen if isinstance(e, PlaybackAcknowledged)]  # the SDK acks too
    assert acks and all(a.playback is not None for a in acks)
    for ack in acks:
        assert ack.playback is not None and ack.playback.played_ms == ack.played_ms
        assert ack.playback.generated_ms == ends[-1] and ack.history_committed is True
    assert closed and closed[-1].epoch == 0 and closed[-1].event["type"] == "session.closed"
