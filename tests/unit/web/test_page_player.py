"""The page's player as the run's listener: what it posts, and positions from the page's reports."""

from __future__ import annotations

from typing import Any

import pytest

from duplex_client.web.player import PagePlayer
from duplex_client.web.protocol import ANSWER_HEADER, PageError

RATE = 24000


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def player() -> tuple[PagePlayer, list[Any], Clock]:
    posted: list[Any] = []
    clock = Clock()
    # page ms are monotonic ms here (the page clock's mapping is tested on its own)
    out = PagePlayer(posted.append, lambda ms: ms / 1000, sample_rate_hz=RATE, clock=clock)
    return out, posted, clock


def pcm(ms: int, value: int = 1000) -> bytes:
    return value.to_bytes(2, "little", signed=True) * (RATE * ms // 1000)


def block(n: int, offset_ms: int, ms: int, at_s: float, frame: int) -> list[Any]:
    return [n, RATE * offset_ms // 1000, RATE * ms // 1000, at_s * 1000, frame]


def test_answers_go_to_the_page_numbered_and_end_or_clear_once() -> None:
    out, posted, _ = player()
    out.start()
    assert out.enqueue("resp_a", pcm(100) + b"\x01")  # an odd byte is dropped
    out.end("resp_a")
    assert not out.enqueue("resp_a", pcm(10))
    out.end("resp_a")
    assert posted[0] == {"type": "player", "rate": RATE, "jitter_ms": 80}
    assert posted[1] == {"type": "play", "n": 1, "id": "resp_a"}
    kind, n = ANSWER_HEADER.unpack_from(posted[2])
    assert (kind, n, len(posted[2]) - ANSWER_HEADER.size) == (3, 1, RATE * 2 // 10)
    assert posted[3:] == [{"type": "end", "n": 1}]
    out.close()
    assert posted[-1] == {"type": "player_stop"}


def test_played_positions_come_from_the_reports_on_the_page_clock() -> None:
    out, _, clock = player()
    out.enqueue("resp_a", pcm(500))
    assert out.active_ids() == ["resp_a"] and out.played_ms("resp_a") == 0
    # the page handed 200 ms to its output; it reaches the speaker at t = 100.1
    out.report({"blocks": [block(1, 0, 200, 100.1, 4800)], "underruns": 0})
    assert out.first_rendered == {"resp_a": pytest.approx(100.1)}
    assert out.played_ms("resp_a") == 0 and out.in_flight("resp_a")
    clock.t = 100.2
    assert out.played_ms("resp_a") == 100
    clock.t = 100.35
    assert out.played_ms("resp_a") == 200 and out.in_flight("resp_a")  # 300 ms still queued
    assert out.audible()
    out.end("resp_a")
    # a seamless next block is placed right after the last, whatever the page's clock jitter
    out.report({"blocks": [block(1, 200, 300, 100.305, 4800 + 4800)], "underruns": 1})
    assert out.underruns == 1
    clock.t = 100.6
    assert out.played_ms("resp_a") == 500 and out.drained("resp_a") and not out.playing()
    heard = out.heard(lambda t: (t - 100.0) * 1000, {})
    spans = [(s.response_id, s.start, s.end) for s in heard.segments]
    assert spans == [("resp_a", 2400, 7200), ("resp_a", 7200, 14400)]  # seamless, in place
    assert heard.audio["resp_a"] == pcm(500)
    assert out.heard_start_ms("resp_a", lambda t: (t - 100.0) * 1000) == pytest.approx(100.0)
    clock.t = 100.7
    assert out.audible()  # within the hangover
    clock.t = 101.0
    assert not out.audible()


def test_a_clear_is_in_flight_until_the_page_confirms_it() -> None:
    out, posted, clock = player()
    out.enqueue("resp_a", pcm(1000))
    out.report({"blocks": [block(1, 0, 100, 100.0, 0)], "underruns": 0})
    clock.t = 100.05
    assert out.clear("resp_a", "output_audio_buffer.cleared") is True
    assert posted[-1] == {"type": "clear", "n": 1}
    assert out.in_flight("resp_a") and not out.drained("resp_a")
    assert out.active_ids() == [] and not out.enqueue("resp_a", pcm(10))
    out.report({"blocks": [block(1, 100, 5, 100.1, 2400)], "underruns": 0})  # the fade
    out.stopped(1)
    clock.t = 100.2
    assert not out.in_flight("resp_a") and out.drained("resp_a")
    assert out.played_ms("resp_a") == 105
    assert out.clear("resp_a") is False  # once


@pytest.mark.parametrize(
    "blocks",
    [
        [[9, 0, 10, 0.0, 0]],  # an unknown response
        [[1, 10, 10, 0.0, 0]],  # not where the last block ended
        [[1, 0, 99999, 0.0, 0]],  # more than was sent
        [[1, 0, 10, "soon", 0]],
        [[1, 0, 10, 0.0]],
    ],
)
def test_reports_that_do_not_add_up_are_refused(blocks: list[Any]) -> None:
    out, _, _ = player()
    out.enqueue("resp_a", pcm(100))
    with pytest.raises(PageError):
        out.report({"blocks": blocks})
