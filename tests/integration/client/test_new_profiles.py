"""The SDK against the reference server's personaplex and nemotron profiles (real loopback).

A clip is written with PyAV (48 kHz AAC in an .m4a), decoded by the SDK's file source and
streamed to an in-process reference server (scripted engine). What the server's unit
assembler accepts is captured and compared with the clip resampled independently.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import av
import numpy as np
import pytest

from duplex_client import DuplexClient, presets
from duplex_client.framing import check_timeline
from duplex_client.framing.timeline import InputTimeline
from duplex_client.media import open_audio
from duplex_client.media.resample import frame_samples, resample
from duplex_client.server import ReferenceServer
from duplex_client.server.engine.script import Script
from duplex_client.sync import SyncDuplexClient
from tests.support.media_files import write_audio_file

SECONDS = 1.2


def clip(tmp_path: Path) -> Path:
    """A 1.2 s 330 Hz tone, 48 kHz AAC (PyAV)."""
    return write_audio_file(tmp_path / "clip.m4a", SECONDS, 48000, 330.0)


def resampled_clip(path: Path, rate: int) -> np.ndarray:
    """The clip decoded by PyAV and resampled to `rate` as float32 by the package's resampler."""
    with av.open(str(path)) as container:
        x = np.concatenate([frame_samples(f) for f in container.decode(audio=0)])
    return resample(x, 48000, rate)


async def test_personaplex_frames_80ms_of_24khz_float_and_is_answered_without_commit(
    tmp_path: Path, received: list[bytes]
) -> None:
    path = clip(tmp_path)
    script = Script.from_dict({"rules": [{"on": "unit", "index": 6, "do": "speak", "text": "hi"}]})
    timeline = InputTimeline()
    async with (
        ReferenceServer(profile="personaplex", engine="scripted", script=script) as server,
        DuplexClient(server.url, model=None, config=presets.personaplex()) as client,
    ):
        assert client.capabilities.chunk_period_ms == 80
        assert client.takes_commits is False
        kinds: list[str] = []
        client.add_listener(lambda event, _at: kinds.append(event.type))
        result = await client.stream(open_audio(path), realtime=False, timeline=timeline)
        assert result.commit_event_id is None  # nothing commits: the model owns the turns
        async for handle in client.responses(idle_s=5):
            if handle.decision == "speak":
                await handle.wait(timeout=5)
                break
        else:
            pytest.fail("no answer without a commit")
        appends = server.appends()
    assert handle.done and handle.audio_ms > 0
    assert "response.created" in kinds and "input_audio_buffer.committed" not in kinds
    assert not timeline.commits
    # The audio sent is the clip at 24 kHz float32, sample for sample, not silence.
    ref = resampled_clip(path, 24000)
    got = np.frombuffer(b"".join(received), "<f4")
    assert len(got) == len(ref) and np.array_equal(got, ref)
    assert np.abs(got).max() > 0.2
    # On the advertised 80 ms grid: every append but the last is one 1920-sample unit.
    assert [a["duration_ms"] for a in appends[:-1]] == [80] * (len(appends) - 1)
    assert [len(p) for p in received[:-1]] == [1920 * 4] * (len(received) - 1)
    assert [a["unit_index"] for a in appends[:-1]] == list(range(len(appends) - 1))
    doc = timeline.to_dict()
    assert doc["input_format"] == {"encoding": "pcm_f32le", "sample_rate_hz": 24000, "channels": 1}
    assert check_timeline(doc) == []


async def test_nemotron_trailing_silence_then_close_drains_the_one_response(
    tmp_path: Path, received: list[bytes]
) -> None:
    """Sy0307's Nemotron e2e, against our profile: 16 kHz float frames, trailing silence,
    `session.close` (never `session.end`), one response drained with every frame counted."""
    path = clip(tmp_path)
    script = Script.from_dict(
        {"chunk_ms": 200, "rules": [{"on": "unit", "index": 5, "do": "speak", "text": "one two"}]}
    )
    async with ReferenceServer(profile="nemotron", engine="scripted", script=script) as server:
        async with DuplexClient(server.url, model=None, config=presets.nemotron()) as client:
            assert client.continuous_stream and not client.takes_commits
            assert client.config.input_audio_format == "pcm_f32le"
            assert client.config.output_sample_rate_hz == 22050
            result = await client.stream(open_audio(path), realtime=False, tail_silence_s=0.5)
            assert result.commit_event_id is None
            end = await client.end_stream(timeout=10)
            (answer,) = client.tracker.handles.values()  # one response for the whole stream
        assert client.closed_reason == "client_close"
        assert client.errors == []  # no session.end was sent (the server refuses it)
    got = np.frombuffer(b"".join(received), "<f4")
    assert np.abs(got).max() > 0.2  # the clip's tone, 16 kHz float32 (the preset's format)
    frames = -(-len(got) // 1280)  # the last partial frame is padded by the server
    assert end.drained and (end.status, end.reason) == ("completed", "stream_drained")
    drain = {"accepted_frames": frames, "text_frames": frames, "audio_frames": frames}
    assert end.drain == {**drain, "drained": True}
    assert answer.sample_rate_hz == 22050 and answer.audio_ms == frames * 80
    assert "one two" in answer.transcript


async def test_the_blocking_client_ends_a_continuous_stream() -> None:
    async with ReferenceServer(profile="nemotron", engine="scripted") as server:

        def script() -> dict[str, object]:
            with SyncDuplexClient(server.url, model=None, config=presets.nemotron()) as client:
                pcm = np.full(1280 * 3 + 160, 0.1, "<f4").tobytes()
                client.append_input(pcm, is_speech=True)
                return client.end_stream(timeout=5).drain

        drain = await asyncio.to_thread(script)
    assert drain == {"accepted_frames": 4, "text_frames": 4, "audio_frames": 4, "drained": True}


async def test_end_stream_on_a_turn_based_profile_is_a_close() -> None:
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        client = DuplexClient(server.url, model="m")
        await client.connect()
        assert client.takes_commits and not client.continuous_stream
        end = await client.end_stream(timeout=5)
    assert not end.drained and end.closed_reason == "client_close"
    assert client.errors == [] and not client.is_open
