"""Real-time loopback: the real client streams 3 s to a local WebSocket peer on the media clock."""

from __future__ import annotations

import asyncio
import statistics
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from duplex_client import DuplexClient
from duplex_client.client.streaming import stream
from duplex_client.framing import BytesPcmSource, InputTimeline, MediaInput, check_timeline
from tests.support.scripted_server import Peer, ScriptedServer
from tests.unit.framing.fakes import FakeSampler, speech_pcm


async def acknowledge(peer: Peer, event: dict[str, Any]) -> None:
    audio_end = sum(
        len(m.get("audio", "")) * 3 // 4 for m in peer.of_type("input_audio_buffer.append")
    )
    await peer.send({
        "type": "input_audio_buffer.committed", "client_event_id": event["event_id"],
        "audio_end_ms": audio_end // 32, "final": True,
    })  # fmt: skip


@pytest.mark.slow
async def test_three_seconds_arrive_on_the_media_clock_without_growing_lag(tmp_path: Path) -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        server.on("input_audio_buffer.commit", acknowledge)
        timeline = InputTimeline(session_id=client.session_id, model="m", url=client.url,
                                 path=tmp_path / "input_timeline.json")  # fmt: skip
        source = MediaInput(BytesPcmSource(speech_pcm(3000)), FakeSampler(3000))
        result = await stream(client, source, timeline=timeline)

        peer = server.peer
        for _ in range(200):
            if timeline.commits and timeline.commits[0]["acknowledged"]:
                break
            await asyncio.sleep(0.01)

    appends = peer.of_type("input_audio_buffer.append")
    assert len(appends) == 15
    at = {m["event_id"]: t for m, t in zip(peer.received, peer.arrivals, strict=True)}
    t0 = result.clock.t0
    lag = [(at[m["event_id"]] - t0) * 1000 - m["media_end_ms"] for m in appends]
    # Nothing arrives before its media time; loopback delivery stays within generous bounds.
    assert min(lag) > -5
    assert max(lag) < 150
    # No growing lag: the spread of arrivals matches the spread of media time.
    spread = (at[appends[-1]["event_id"]] - at[appends[0]["event_id"]]) * 1000
    assert spread == pytest.approx(2800, abs=120)
    assert abs(statistics.mean(lag[-5:]) - statistics.mean(lag[:5])) < 60
    commit = peer.of_type("input_audio_buffer.commit")[0]
    assert (at[commit["event_id"]] - t0) * 1000 == pytest.approx(3000, abs=150)
    assert [m["audio_end_ms"] for m in appends if m.get("video_frames")] == [1000, 2000, 3000]
    assert [m["unit_index"] for m in appends if "unit_index" in m] == [0, 1, 2]

    doc = timeline.to_dict()
    assert check_timeline(doc) == []
    assert [r["event_id"] for r in doc["appends"]] == [m["event_id"] for m in appends]
    assert doc["commits"][0]["acknowledged"]["audio_end_ms"] == 3000
    assert doc["session"]["session_id"] == client.session_id
    assert (tmp_path / "input_timeline.json").exists()


class ThreadRecordingPcm(BytesPcmSource):
    """In-memory PCM that records the threads its chunks are read on."""

    def chunks(self) -> Iterator[bytes]:
        for chunk in BytesPcmSource.chunks(self):
            THREADS.append(threading.get_ident())
            yield chunk


class DecodingPcm:
    """A `PcmSource` that is not marked in memory (as a decoder is not)."""

    def __init__(self, pcm: bytes) -> None:
        self.inner = BytesPcmSource(pcm, chunk_bytes=6400)

    def chunks(self) -> Iterator[bytes]:
        for chunk in self.inner.chunks():
            THREADS.append(threading.get_ident())
            yield chunk

    def info(self) -> dict[str, Any]:
        return self.inner.info()


THREADS: list[int] = []


async def test_sources_in_memory_plan_on_the_loop_and_decoders_in_a_worker() -> None:
    loop_thread = threading.get_ident()
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        THREADS.clear()
        await stream(client, ThreadRecordingPcm(speech_pcm(1000), chunk_bytes=6400),
                      realtime=False, commit=False)  # fmt: skip
        assert THREADS and set(THREADS) == {loop_thread}  # a slice of memory: no thread hop
        THREADS.clear()
        await stream(client, DecodingPcm(speech_pcm(1000)), realtime=False, commit=False)
        assert THREADS and loop_thread not in THREADS  # decoding stays off the loop
