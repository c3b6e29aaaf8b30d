"""The answers inside one continuous response become turn rows of their own (issue #29)."""

from __future__ import annotations

import numpy as np

from duplex_client.analysis.listener import HeardSegment, HeardSpan
from duplex_client.analysis.spoken import split_all, spoken_stretches
from duplex_client.analysis.turns import ResponseFacts

RATE = 22050
PACKET = RATE * 80 // 1000


def stream(*loud: bool) -> bytes:
    """Packets of silence or tone, 80 ms each."""
    t = np.arange(PACKET) / RATE
    tone = (np.sin(2 * np.pi * 300 * t) * 6000).astype("<i2")
    return b"".join(tone.tobytes() if x else bytes(PACKET * 2) for x in loud)


def test_stretches_bridge_short_pauses_and_split_long_ones() -> None:
    pcm = stream(False, True, True, False, True, False, False, False, False, False, True)
    # one packet of pause (80 ms < 400 ms) is bridged; five packets (400 ms) split
    assert spoken_stretches(pcm, RATE) == [(PACKET, 5 * PACKET), (10 * PACKET, 11 * PACKET)]
    assert spoken_stretches(stream(False, False), RATE) == []


def test_a_continuous_response_becomes_one_row_per_answer_heard_where_it_was() -> None:
    pcm = stream(False, False, True, True, False, False, False, False, False, False, True)
    n = len(pcm) // 2
    # heard from media 1000 ms on, in two segments (an underrun after packet 5)
    at = RATE  # track sample of media 1 s
    segments = [
        HeardSegment("r", at, 0, 6 * PACKET),
        HeardSegment("r", at + 8 * PACKET, 6 * PACKET, n - 6 * PACKET),
    ]
    span = HeardSpan("r", 1000.0, 1000.0, None, n * 1000 / RATE, n * 1000 / RATE, None, None)
    facts = [ResponseFacts("r", 0, 990.0, 1000.0, n * 1000 / RATE, "hello there")]
    out_facts, out_segments, out_audio, out_spans = split_all(
        facts, segments, {"r": pcm}, [span], RATE
    )
    assert [f.response_id for f in out_facts] == ["r#0", "r#1"]
    first, second = out_spans
    assert first.heard_start_ms == round((at + 2 * PACKET) * 1000 / RATE, 3)  # 1160 ms
    assert first.heard_ms == 160.0
    # the second answer is heard after the underrun's two packets of gap
    assert second.heard_start_ms == round((at + 12 * PACKET) * 1000 / RATE, 3)
    assert out_facts[0].decided_ms == first.heard_start_ms
    assert out_facts[0].transcript == "hello there" and out_facts[1].transcript == ""
    assert out_audio["r#0"] == pcm[2 * PACKET * 2 : 4 * PACKET * 2]
    assert set(out_audio) == {"r#0", "r#1"}
    assert [s.response_id for s in out_segments] == ["r#0", "r#1"]


def test_a_silent_stream_has_no_answers() -> None:
    pcm = stream(False, False, False)
    facts = [ResponseFacts("r", 0, 0.0, 0.0, 240.0, "")]
    segments = [HeardSegment("r", 0, 0, len(pcm) // 2)]
    assert split_all(facts, segments, {"r": pcm}, [], RATE) == ([], [], {}, [])
