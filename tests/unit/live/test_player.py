"""The player against a hand-stepped fake output stream: positions come from the stream clock."""

from __future__ import annotations

import numpy as np
import pytest

from duplex_client.media.devices.lookup import DeviceError
from duplex_client.media.devices.player import Player
from tests.unit.live.fakes import FakeOutputStream, FakeSoundDevice

RATE = 24000


def pcm(ms: int, value: int = 1000) -> bytes:
    return np.full(RATE * ms // 1000, value, dtype="<i2").tobytes()


def started(latency_s: float = 0.0, jitter_ms: int = 80) -> tuple[Player, FakeOutputStream]:
    sd = FakeSoundDevice(pace=None, output_latency_s=latency_s)
    player = Player(sd=sd, jitter_ms=jitter_ms, hangover_ms=100)
    player.start()
    return player, sd.outputs[0]


def test_played_position_follows_the_stream_not_the_queue() -> None:
    player, out = started()
    assert (out.samplerate, out.blocksize) == (RATE, 480)
    player.enqueue("r1", pcm(1000, 11))
    assert player.played_ms("r1") == 0 and player.queued_ms("r1") == 1000
    out.render(200)
    assert player.played_ms("r1") == 200 and player.written_ms("r1") == 200
    assert player.audible() and player.active_ids() == ["r1"]
    assert bytes(out.played) == pcm(200, 11)


def test_output_latency_is_not_counted_as_played() -> None:
    player, out = started(latency_s=0.1)
    player.enqueue("r1", pcm(1000))
    out.render(300)
    assert player.written_ms("r1") == 300 and player.played_ms("r1") == 200
    assert player.in_flight("r1")


def test_jitter_buffer_waits_for_enough_audio_or_the_end() -> None:
    player, out = started(jitter_ms=80)
    player.enqueue("r1", pcm(40, 5))
    out.render(100)
    assert player.played_ms("r1") == 0 and set(out.played) == {0}  # silence, not garbage
    player.end("r1")
    out.render(100)
    assert player.played_ms("r1") == 40 and player.drained("r1")
    assert not player.active_ids()


def test_clear_drops_queued_audio_at_once_and_refuses_late_audio() -> None:
    player, out = started()
    player.enqueue("r1", pcm(1000, 9))
    out.render(300)
    assert player.clear("r1") is True
    assert player.queued_ms("r1") == 0 and player.active_ids() == []
    assert player.enqueue("r1", pcm(200, 9)) is False
    out.render(200)
    assert player.played_ms("r1") == 300
    assert bytes(out.played[-RATE * 2 // 5 :]) == bytes(RATE * 2 // 5)  # 200 ms of silence
    assert player.drained("r1") and not player.clear("r1")


def test_responses_play_in_order_gaplessly_and_drain() -> None:
    player, out = started(jitter_ms=0)
    player.enqueue("r1", pcm(100, 1))
    player.end("r1")
    player.enqueue("r2", pcm(100, 2))
    player.end("r2")
    out.render(300)
    assert (player.played_ms("r1"), player.played_ms("r2")) == (100, 100)
    assert bytes(out.played[: RATE * 2 // 5]) == pcm(100, 1) + pcm(100, 2)
    assert player.drained("r1") and player.drained("r2")
    out.render(200)
    assert not player.audible()  # the hangover is over


def test_clear_all_returns_what_was_playing() -> None:
    player, out = started(jitter_ms=0)
    player.enqueue("r1", pcm(500))
    player.enqueue("r2", pcm(500))
    out.render(100)
    assert player.clear_all() == ["r1", "r2"]
    assert not player.active_ids()


def test_no_output_device_is_a_clear_error() -> None:
    with pytest.raises(DeviceError, match="speaker"):
        Player(sd=FakeSoundDevice(devices=False)).start()


def test_rendered_blocks_are_stamped_with_when_they_play_on_the_monotonic_clock() -> None:
    """The device's DAC times, mapped to the monotonic clock, place heard.wav's samples."""
    from duplex_client.analysis.heard import render_heard, segments_from_blocks
    from duplex_client.framing.clock import MediaClock

    sd = FakeSoundDevice(pace=None, output_latency_s=0.05)
    holder: dict[str, FakeOutputStream] = {}

    def monotonic() -> float:  # the stream clock runs at 1000 s, monotonic at 40 s
        stream = holder.get("out")
        return 40.0 if stream is None else stream.time - 960.0

    player = Player(sd=sd, jitter_ms=0, clock=monotonic)
    player.start()
    out = holder["out"] = sd.outputs[0]
    media = MediaClock("realtime", now=monotonic)
    media.start()  # media 0 = stream time 1000 s
    out.render(100)  # 100 ms of silence first
    player.enqueue("r1", pcm(200, 123))
    player.end("r1")
    out.render(400)
    assert player.first_rendered["r1"] == pytest.approx(40.0 + 0.1 + 0.05)  # + DAC latency
    blocks = [(media.media_ms_at(t), rid, data) for t, rid, data in player.rendered]
    segments, audio = segments_from_blocks(blocks, RATE)  # type: ignore[arg-type]
    track = render_heard(segments, audio, RATE)
    lit = np.flatnonzero(track)
    # the first sample is heard 150 ms in (100 ms queued silence + 50 ms output latency)
    assert lit[0] == round(0.15 * RATE) and len(lit) == round(0.2 * RATE)
    assert set(track[lit].tolist()) == {123}
