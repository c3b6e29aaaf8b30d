"""The appendix's last fields, sans I/O: append speech hints, typed metadata and capabilities.

A client reads them tolerantly (ill-typed values take defaults, nothing raises); a server reads
the client's hints strictly and derives one speech verdict from them, in upstream's order.
"""

from __future__ import annotations

from typing import Any

import pytest

from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.client_events import InputAudioBufferAppend, decode_client_event
from duplex_client.protocol.fields import SchemaError
from duplex_client.protocol.objects import AudioDeltaInfo, ContentPart, ListenInfo
from duplex_client.protocol.requests import ResponseOptions, SessionRequest, TurnDetection


def _append(**hints: Any) -> InputAudioBufferAppend:
    event = decode_client_event({"type": "input_audio_buffer.append", "audio": "AAAA", **hints})
    assert isinstance(event, InputAudioBufferAppend)
    return event


@pytest.mark.parametrize(
    ("hints", "verdict"),
    [
        ({}, None),
        ({"speech_probability": 0.49}, False),
        ({"speech_probability": 0.5}, True),
        ({"vad": {}}, None),
        ({"vad": {"probability": 0.7}}, True),
        ({"vad": {"speech_probability": 0.2}, "speech_probability": 0.9}, False),
        ({"vad": {"is_speech": True, "speech_probability": 0.1}}, True),
        ({"vad": {"silence_rms": 0.2}, "speech_probability": 0.9}, True),
        ({"speech": False, "vad": {"is_speech": True}}, False),
        ({"is_speech": True, "speech_probability": 0.0}, True),
    ],
)
def test_the_declared_speech_verdict_follows_upstreams_order(
    hints: dict[str, Any], verdict: bool | None
) -> None:
    assert _append(**hints).declared_speech is verdict


def test_the_silence_threshold_prefers_the_appends_own() -> None:
    assert _append().silence_rms is None
    assert _append(vad={"silence_rms": 0.2}).silence_rms == 0.2
    assert _append(overlap_silence_rms=0.01, vad={"silence_rms": 0.2}).silence_rms == 0.01


@pytest.mark.parametrize(
    ("hints", "param"),
    [
        ({"speech_probability": 2}, "speech_probability"),
        ({"speech_probability": True}, "speech_probability"),
        ({"vad": []}, "vad"),
        ({"vad": {"probability": 1.01}}, "vad.speech_probability"),
        ({"vad": {"silence_rms": -1}}, "vad.silence_rms"),
        ({"overlap_silence_rms": 3}, "overlap_silence_rms"),
    ],
)
def test_bad_speech_hints_name_the_field(hints: dict[str, Any], param: str) -> None:
    with pytest.raises(SchemaError) as info:
        _append(**hints)
    assert info.value.code == "bad_event" and info.value.param == param


def test_hints_survive_a_round_trip() -> None:
    event = _append(speech_probability=0.3, vad={"probability": 0.8}, overlap_silence_rms=0.1)
    wire = event.to_dict()
    assert wire["vad"] == {"speech_probability": 0.8}
    assert decode_client_event(wire) == event


def test_content_parts_say_is_speech_and_read_the_old_name() -> None:
    assert ContentPart(type="input_audio", is_speech=False).to_dict() == {
        "type": "input_audio",
        "is_speech": False,
    }
    assert ContentPart.from_raw({"type": "input_audio", "speech": True}).is_speech is True
    assert ContentPart.from_raw({"type": "input_audio", "is_speech": "no"}).is_speech is None


def test_metadata_records_read_tolerantly() -> None:
    raw = {"session_id": "s", "epoch": 3, "end_of_turn": True, "audio_duration_ms": 400}
    info = AudioDeltaInfo.from_raw(raw)
    assert (info.epoch, info.end_of_turn, info.audio_duration_ms) == (3, True, 400)
    bad = AudioDeltaInfo.from_raw({"session_id": "s", "end_of_turn": "yes", "epoch": "x"})
    assert (bad.epoch, bad.end_of_turn, bad.audio_duration_ms) == (None, False, 0)
    assert ListenInfo.from_raw({"session_id": "s", "epoch": 0, "reason": 5}).reason is None
    listen = ListenInfo(session_id="s", epoch=1, reason="model_listen").to_dict()
    assert listen == {
        "type": "response.listen",
        "session_id": "s",
        "epoch": 1,
        "reason": "model_listen",
    }


def test_capabilities_type_appends_sessions_and_the_lifecycle() -> None:
    caps = Capabilities.from_dict(
        {
            "supports_input_append": False,
            "supports_multi_session": True,
            "response_lifecycle": "continuous_stream",
        }
    )
    assert (caps.supports_input_append, caps.supports_multi_session) == (False, True)
    assert caps.response_lifecycle == "continuous_stream"
    wire = caps.to_dict()
    assert wire["supports_input_append"] is False and wire["supports_multi_session"] is True
    assert wire["response_lifecycle"] == "continuous_stream"
    junk = Capabilities.from_dict(
        {"supports_input_append": 1, "supports_multi_session": "y", "response_lifecycle": 7}
    )
    assert (junk.supports_input_append, junk.supports_multi_session) == (True, False)
    assert junk.response_lifecycle is None and "response_lifecycle" not in junk.to_dict()


def test_session_and_response_synonyms() -> None:
    assert SessionRequest.decode({"sample_rate": 24000}).sample_rate_hz == 24000
    with pytest.raises(SchemaError) as info:
        SessionRequest.decode({"sample_rate": 12345})
    assert info.value.code == "unsupported_audio_format"
    audio = SessionRequest.decode({"audio": {"output": {"format": {"type": "audio/pcm"}}}})
    assert audio.audio is not None and audio.audio.output is not None
    with pytest.raises(SchemaError) as info:
        SessionRequest.decode({"audio": {"output": {"format": "wav"}}})
    assert info.value.param == "audio.output.format"
    assert ResponseOptions.decode({"response_format": "pcm"}).output_audio_format == "pcm"
    with pytest.raises(SchemaError) as info:
        ResponseOptions.decode({"output_audio_format": "g711_alaw"})
    assert info.value.code == "unsupported_audio_format"
    knobs = TurnDetection.decode(
        {"type": "server_vad", "threshold": 0.7, "silence_duration_ms": 300}
    )
    assert (knobs.threshold, knobs.silence_duration_ms) == (0.7, 300)


def test_the_server_vad_reads_its_knobs_through_the_schema() -> None:
    from dataclasses import replace

    from duplex_client.server.engine.vad import VadParams
    from duplex_client.server.settings import SessionSettings
    from duplex_client.server.vad_turns import _params

    base = SessionSettings()
    assert _params(base) == VadParams()
    vad = {
        "type": "server_vad",
        "threshold": 0.7,
        "silence_duration_ms": 300.0,
        "min_speech_duration_ms": 160.0,
    }
    tuned = _params(replace(base, turn_detection=vad))
    assert (tuned.threshold, tuned.silence_ms, tuned.min_speech_ms) == (0.7, 300, 160)
    plain = _params(replace(base, turn_detection={"type": "server_vad"}))
    assert (plain.threshold, plain.silence_ms) == (VadParams().threshold, VadParams().silence_ms)


def test_an_audio_delta_reads_its_turn_end_and_duration() -> None:
    from duplex_client.protocol.events import parse_server_event
    from duplex_client.protocol.response_events import ResponseAudioDelta

    meta = {"session_id": "s", "epoch": 0, "end_of_turn": True, "audio_duration_ms": 600}
    event = parse_server_event({"type": "response.audio.delta", "delta": "", "metadata": meta})
    assert isinstance(event, ResponseAudioDelta)
    assert (event.end_of_turn, event.audio_duration_ms) == (True, 600)
    junk = {"end_of_turn": "yes", "audio_duration_ms": True}
    event = parse_server_event({"type": "response.output_audio.delta", "metadata": junk})
    assert isinstance(event, ResponseAudioDelta)
    assert (event.end_of_turn, event.audio_duration_ms) == (None, None)
