"""Raw JSON: `input_audio_transcription` and its `...input_audio_transcription.completed`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.server.conftest import MakeServer
from tests.integration.server.speech import (
    INSTRUCTION,
    needs_speech,
    of_type,
    send_pcm,
    spoken,
)
from tests.integration.server.wire import Wire, tone

TRANSCRIPTION = {"model": "pocketsphinx"}
_DONE = "conversation.item.input_audio_transcription.completed"


def _answers(events: list[dict[str, Any]]) -> list[str]:
    """Final assistant transcripts, either event-name generation."""
    names = ("response.output_audio_transcript.done", "response.audio_transcript.done")
    return [e["transcript"] for e in events if e["type"] in names]


def _heard(answer: str) -> str:
    """The words of `You said: <words>.`"""
    assert answer.startswith("You said: "), answer
    return answer.removeprefix("You said: ").split(".")[0]


async def test_the_session_echoes_and_updates_the_transcription_config(server) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open(input_audio_transcription=TRANSCRIPTION)
    assert created["session"]["input_audio_transcription"] == TRANSCRIPTION
    update = {"type": "session.update", "event_id": "evt_u"}
    await wire.send({**update, "session": {"input_audio_transcription": None}})
    updated = (await wire.until("session.updated"))[-1]
    assert updated["session"]["input_audio_transcription"] is None
    await wire.send({**update, "session": {"input_audio_transcription": "whisper"}})
    err = await wire.error("bad_event")
    assert err["error"]["param"] == "input_audio_transcription"
    await wire.close()


async def test_an_engine_that_does_not_transcribe_sends_none(server) -> None:
    wire = await Wire.connect(server.url)  # the scripted engine
    await wire.open(input_audio_transcription=TRANSCRIPTION)
    await send_pcm(wire, tone(1000), "q")
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    events = await wire.until("response.done")
    assert of_type(events, "input_audio_buffer.committed") and not of_type(events, _DONE)
    await wire.close()


@needs_speech
@pytest.mark.parametrize("names", ["ga", "beta"])
async def test_push_to_talk_turn_is_transcribed_between_commit_and_item_done(
    make_server: MakeServer, names: str
) -> None:
    server = await make_server(profile="joyai", engine="speech", event_names=names)
    wire = await Wire.connect(server.url)
    await wire.open(
        turn_detection=None,
        extra_body={"auto_response": False},
        input_audio_transcription=TRANSCRIPTION,
    )
    await send_pcm(wire, spoken(INSTRUCTION), "say")
    commit = {"type": "input_audio_buffer.commit", "event_id": "evt_c", "response_create": True}
    await wire.send(commit)
    events = await wire.until("response.done")
    kinds = [e["type"] for e in events]
    committed = events[kinds.index("input_audio_buffer.committed")]
    (done,) = of_type(events, _DONE)
    heard = _heard(_answers(events)[0])
    body = {k: v for k, v in done.items() if k not in ("event_id", "server_event_seq")}
    assert body == {"type": _DONE, "item_id": committed["item_id"], "content_index": 0,
                    "transcript": heard}  # fmt: skip
    assert "color" in heard.split()
    user_done = next(
        i
        for i, e in enumerate(events)
        if e["type"] == "conversation.item.done" and e["item"]["id"] == committed["item_id"]
    )
    assert kinds.index("input_audio_buffer.committed") < events.index(done) < user_done
    await wire.close()


@needs_speech
async def test_without_the_config_no_transcription_event(make_server: MakeServer) -> None:
    server = await make_server(profile="joyai", engine="speech")
    wire = await Wire.connect(server.url)
    await wire.open(turn_detection=None, extra_body={"auto_response": False})
    await send_pcm(wire, spoken("hello"), "say")
    commit = {"type": "input_audio_buffer.commit", "event_id": "evt_c", "response_create": True}
    await wire.send(commit)
    events = await wire.until("response.done")
    assert _answers(events) and not of_type(events, _DONE)
    await wire.close()


@needs_speech
async def test_model_native_lane_transcribes_what_it_heard_in_the_turn(
    make_server: MakeServer,
) -> None:
    server = await make_server(profile="minicpmo", engine="speech")
    wire = await Wire.connect(server.url)
    await wire.open(input_audio_transcription=TRANSCRIPTION)
    await send_pcm(wire, spoken(INSTRUCTION), "say")
    answered: list[dict[str, Any]] = await wire.until("response.done")
    heard = _heard(_answers(answered)[0])
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    events = await wire.until(_DONE)
    committed = of_type(events, "input_audio_buffer.committed")[-1]
    assert events[-1]["item_id"] == committed["item_id"]
    assert events[-1]["transcript"] == heard
    await wire.close()


async def test_the_ga_place_of_the_transcription_config(server) -> None:
    wire = await Wire.connect(server.url)
    audio = {"input": {"sample_rate_hz": 16000, "transcription": TRANSCRIPTION}}
    created, _ = await wire.open(audio=audio)
    assert created["session"]["input_audio_transcription"] == TRANSCRIPTION
    bad = {"audio": {"input": {"transcription": 3}}}
    await wire.send({"type": "session.update", "event_id": "evt_bad", "session": bad})
    err = await wire.error("bad_event")
    assert err["error"]["param"] == "audio.input.transcription"
    await wire.close()
