"""The virtual player: the listener model on a media clock read from a fake time source."""

from __future__ import annotations

from duplex_client.analysis.virtual_player import VirtualPlayer
from duplex_client.framing.clock import MediaClock


class FakeTime:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def pcm(ms: int, rate: int = 1000) -> bytes:
    return bytes(2 * ms * rate // 1000)


def test_audio_plays_on_the_media_clock_and_is_acked_as_heard() -> None:
    now = FakeTime()
    clock = MediaClock("realtime", now=now)
    clock.start()
    player = VirtualPlayer(clock, sample_rate_hz=1000)
    now.t += 0.5  # media 500 ms
    assert player.enqueue("a", pcm(1000))
    player.end("a")
    now.t += 0.25
    assert player.played_ms("a") == 250 and player.in_flight("a") and player.playing()
    assert player.active_ids() == ["a"] and not player.drained("a")
    now.t += 1.0
    assert player.played_ms("a") == 1000 and player.drained("a") and not player.playing()
    span = player.spans()[0]
    assert (span.heard_start_ms, span.heard_end_ms, span.cut) == (500, 1500, None)
    assert bytes(player.audio["a"]) == pcm(1000)


def test_a_clear_cuts_at_the_moment_and_refuses_later_audio() -> None:
    now = FakeTime()
    clock = MediaClock("realtime", now=now)
    clock.start()
    player = VirtualPlayer(clock, sample_rate_hz=1000)
    player.enqueue("a", pcm(1000))
    now.t += 0.3
    assert player.clear("a", "output_audio_buffer.cleared") is True
    assert not player.enqueue("a", pcm(100)) and not player.in_flight("a")
    assert player.drained("a") and player.played_ms("a") == 300
    assert player.spans()[0].cut == "output_audio_buffer.cleared"
    now.t += 1
    assert player.clear("a") is False  # already cut
    assert player.segments()[0].samples == 300


def test_before_the_stream_starts_audio_counts_from_media_zero() -> None:
    now = FakeTime()
    player = VirtualPlayer(MediaClock("realtime", now=now), sample_rate_hz=1000)
    assert player.enqueue("a", pcm(10) + b"\x01")  # a stray odd byte is not a sample
    assert player.spans()[0].heard_start_ms == 0 and player.spans()[0].received_ms == 10


def test_ms_until_says_when_a_position_is_heard_or_the_response_drains() -> None:
    now = FakeTime()
    clock = MediaClock("realtime", now=now)
    clock.start()
    player = VirtualPlayer(clock, sample_rate_hz=1000)
    assert player.ms_until("a", 250) is None  # nothing of it yet
    player.enqueue("a", pcm(400))
    now.t += 0.1
    assert player.ms_until("a", 250) == 150  # queued at 0, heard from 0
    assert player.ms_until("a", 600) is None  # not received that far, not ended: unknown
    player.end("a")
    assert player.ms_until("a", 600) == 300  # it drains at 400 first
    now.t += 0.2
    assert player.ms_until("a", 250) == 0  # already heard: due now
    # a second answer queued behind the first starts where the first ends
    player.enqueue("b", pcm(500))
    assert player.ms_until("b", 250) == 350
    # the schedule agrees with the positions it predicts
    now.t += 0.35
    assert player.played_ms("b") == 250
    player.clear("b")
    assert player.ms_until("b", 500) == 0 and player.drained("b")
