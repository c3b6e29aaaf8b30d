"""The responder's documented rules."""

from __future__ import annotations

from duplex_client.server.engine.responder import Observation, Responder


def test_speech_is_echoed_with_the_colour_and_becomes_the_instruction() -> None:
    r = Responder()
    assert r.answer(Observation("tell me the color", "red")) == (
        "You said: tell me the color. I see red."
    )
    assert r.instruction == "tell me the color"
    assert r.answer(Observation("hello", None)) == "You said: hello."


def test_unrecognised_speech_still_gets_an_answer() -> None:
    assert Responder().answer(Observation("", None)) == (
        "I heard you, but I did not catch the words."
    )


def test_camera_only_answers_only_colour_changes() -> None:
    r = Responder()
    assert r.answer(Observation(None, None)) is None
    assert r.answer(Observation(None, "blue")) == "I see blue."
    assert r.answer(Observation(None, "blue")) is None
    assert r.answer(Observation(None, None)) is None
    assert r.answer(Observation("what do you see", "blue")) == (
        "You said: what do you see. I see blue."
    )
    assert r.answer(Observation(None, "blue")) is None
    assert r.answer(Observation(None, "green")) == "I see green. You asked: what do you see."
    r.forget()
    assert r.answer(Observation(None, "green")) == "I see green."
