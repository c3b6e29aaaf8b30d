"""Rendering the heard track and the conversation mix from segments."""

from __future__ import annotations

import numpy as np
import pytest

from duplex_client.analysis.heard import (
    heard_length,
    mix_conversation,
    render_heard,
    segments_from_blocks,
)
from duplex_client.analysis.listener import HeardSegment, ListenerModel


def pcm(*values: int) -> bytes:
    return np.array(values, dtype="<i2").tobytes()


def test_segments_are_placed_at_their_samples_and_silence_fills_the_rest() -> None:
    segments = [HeardSegment("a", 2, 0, 3), HeardSegment("b", 7, 1, 2)]
    track = render_heard(segments, {"a": pcm(1, 2, 3), "b": pcm(9, 8, 7)}, 10)
    assert track.tolist() == [0, 0, 1, 2, 3, 0, 0, 8, 7, 0]


def test_the_track_is_as_long_as_the_media_unless_audio_plays_past_it() -> None:
    assert heard_length(100, [HeardSegment("a", 10, 0, 20)]) == 100
    assert heard_length(100, [HeardSegment("a", 90, 0, 30)]) == 120
    assert heard_length(0, []) == 0


def test_a_segment_without_its_audio_is_an_error_not_silence() -> None:
    with pytest.raises(ValueError, match="the response has 2"):
        render_heard([HeardSegment("a", 0, 1, 2)], {"a": pcm(1, 2)}, 10)
    with pytest.raises(ValueError, match="outside"):
        render_heard([HeardSegment("a", 9, 0, 2)], {"a": pcm(1, 2)}, 10)


def test_the_listener_model_and_the_renderer_agree() -> None:
    model = ListenerModel(1000)
    model.arrive("a", 3, 2)
    model.end("a", 2)
    model.arrive("b", 4, 3)  # queued after "a" (ends at 5)
    model.end("b", 3)
    model.cut("b", 7, by="output_audio_buffer.cleared")  # two samples of b heard
    audio = {"a": pcm(1, 2, 3), "b": pcm(4, 5, 6, 7)}
    segments = model.segments()
    track = render_heard(segments, audio, heard_length(8, segments))
    assert track.tolist() == [0, 0, 1, 2, 3, 4, 5, 0]


def test_the_mix_is_input_left_and_heard_right_padded_to_the_longer() -> None:
    sent = np.array([1, 2, 3], dtype=np.int16)
    heard = np.array([0, 5, 0, 6, 7], dtype=np.int16)
    mix = mix_conversation(sent, heard)
    assert mix.shape == (5, 2) and mix.dtype == np.int16
    assert mix[:, 0].tolist() == [1, 2, 3, 0, 0] and mix[:, 1].tolist() == heard.tolist()


def test_device_blocks_become_segments_on_the_media_clock() -> None:
    blocks = [(10.0, "a", pcm(1, 2)), (12.0, "a", pcm(3)), (20.0, "b", pcm(4, 5))]
    segments, audio = segments_from_blocks(blocks, 1000)
    assert segments == [
        HeardSegment("a", 10, 0, 2),
        HeardSegment("a", 12, 2, 1),
        HeardSegment("b", 20, 0, 2),
    ]
    assert audio == {"a": pcm(1, 2, 3), "b": pcm(4, 5)}
    track = render_heard(segments, audio, 22)
    assert track[10:13].tolist() == [1, 2, 3] and track[20:].tolist() == [4, 5]
