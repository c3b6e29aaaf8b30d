"""Streaming segmentation and the speech engine's own rendering."""

from __future__ import annotations

from duplex_client.server.engine.listener import SegmentListener
from duplex_client.server.engine.speech import SpeechEngine
from duplex_client.server.engine.tts import speech_pcm16

UNIT = 32000  # 1 s of 16 kHz PCM16


def test_one_utterance_comes_out_once_with_its_margins() -> None:
    pcm = speech_pcm16("can you see my hand", 16000, lead_ms=1000, tail_ms=2000)
    listener = SegmentListener(16000)
    segments = []
    for i in range(0, len(pcm), UNIT):
        segments += listener.push(pcm[i : i + UNIT])
    (segment,) = segments
    speech_samples = len(pcm) // 2 - 16000 * 3
    assert speech_samples * 0.8 <= len(segment) <= speech_samples + 16000
    assert not listener.in_speech and listener.flush() is None


def test_flush_cuts_the_utterance_under_way() -> None:
    pcm = speech_pcm16("tell me the color of the ball", 16000, lead_ms=500)
    listener = SegmentListener(16000)
    assert listener.push(pcm) == []
    assert listener.in_speech
    segment = listener.flush()
    assert segment is not None and len(segment) > 16000
    assert not listener.in_speech


def test_render_fixes_the_length_when_asked() -> None:
    engine = SpeechEngine()
    chunks = engine.render("I see red.", 24000, 2500)
    assert [len(c.pcm) for c in chunks] == [48000, 48000, 24000]
    assert "".join(c.text for c in chunks) == "I see red."
    natural = engine.render("I see red.", 16000, None)
    assert sum(len(c.pcm) for c in natural) < 2 * 16000 * 2
