"""Conformance (#20, the appendix's last rows): exact JSON over a real loopback socket.

Append speech hints (`speech_probability`, `vad`, `overlap_silence_rms`), the content part's
`is_speech`, the echoed request on `conversation.item.deleted` / `.truncated`,
`session.resync_required.session_id`, the typed metadata keys, the typed capabilities, and the
session's `sample_rate` / `audio.output.format` / VAD knobs and a response's output format.
"""

from __future__ import annotations

from typing import Any

import pytest

from duplex_client.protocol import ErrorCode
from duplex_client.server import Limits, Script
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import Wire, answered_turn_request, append, silence, tone

SPEAK = Script.from_dict({"chunk_ms": 200, "defaults": {"commit": {"do": "speak", "text": "a b"}}})


def _one(events: list[dict[str, Any]], etype: str) -> dict[str, Any]:
    found = [e for e in events if e["type"] == etype]
    assert len(found) == 1, [e["type"] for e in events]
    return found[0]


async def _commit(wire: Wire, audio: bytes, n: int, **hints: Any) -> list[dict[str, Any]]:
    """One append with `hints` and its commit; the events up to the turn's answer."""
    await wire.send(append(audio, event_id=f"evt_a{n}", **hints))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": f"evt_c{n}"})
    answered = ("response.listen", "rate_limits.updated")
    return await wire.until(lambda e: e["type"] in answered)


def _user_part(events: list[dict[str, Any]]) -> dict[str, Any]:
    added = [e["item"] for e in events if e["type"] == "conversation.item.added"]
    (user,) = [item for item in added if item["role"] == "user"]
    return dict(user["content"][0])


# --- the client's speech verdict ---


@pytest.mark.parametrize(
    ("audio", "hints", "speech"),
    [
        (tone(400), {"speech_probability": 0.2}, False),
        (silence(400), {"speech_probability": 0.5}, True),
        (silence(400), {"vad": {"speech_probability": 0.9}}, True),
        (silence(400), {"vad": {"probability": 0.9}}, True),
        (tone(400), {"vad": {"is_speech": False, "speech_probability": 0.9}}, False),
        (tone(400), {"is_speech": True, "vad": {"is_speech": False}}, True),
        (silence(400), {"vad": {"speech_probability": 0.1}, "speech_probability": 0.9}, False),
        (tone(400), {}, True),  # no hint: the RMS gate
        (silence(400), {}, False),
    ],
)
async def test_append_hints_decide_the_turns_speech(
    make_server: MakeServer, audio: bytes, hints: dict[str, Any], speech: bool
) -> None:
    """`is_speech`/`speech`, then `vad`, then `speech_probability` (0.5 is speech), then RMS."""
    server = await make_server(script=SPEAK)
    wire = await Wire.connect(server.url)
    await wire.open()
    events = await _commit(wire, audio, 1, **hints)
    assert _user_part(events)["is_speech"] is speech
    committed = _one(events, "input_audio_buffer.committed")["event"]["message"]
    assert committed["content"][0]["is_speech"] is speech
    await wire.close()


@pytest.mark.parametrize(
    "hints",
    [{"speech_probability": 1.5}, {"vad": {"probability": -0.1}}, {"vad": "yes"}],
    ids=["probability", "vad-probability", "vad-type"],
)
async def test_ill_typed_speech_hints_are_refused(server, hints: dict[str, Any]) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(200), event_id="evt_bad", **hints))
    err = (await wire.error(ErrorCode.BAD_EVENT))["error"]
    assert err["event_id"] == "evt_bad"
    assert err["param"].split(".")[0] in ("speech_probability", "vad")
    await wire.close()


def _overlap_script() -> Script:
    return Script.from_dict(
        {
            "chunk_ms": 200,
            "chunk_interval_ms": 400,
            "defaults": {"commit": {"do": "speak", "text": "a b c d e f g h"}},
        }
    )


@pytest.mark.parametrize(
    ("hints", "action"),
    [
        ({}, "barge_in"),
        ({"overlap_silence_rms": 0.5}, "listen"),
        ({"vad": {"silence_rms": 0.5}}, "listen"),
        ({"overlap_silence_rms": 0.001, "vad": {"silence_rms": 0.5}}, "barge_in"),
    ],
)
async def test_an_appends_silence_threshold_drives_the_overlap_gate(
    make_server: MakeServer, hints: dict[str, Any], action: str
) -> None:
    """A tone (RMS about 0.17) is speech under the session's 0.003, silence under 0.5."""
    server = await make_server(script=_overlap_script())
    wire = await Wire.connect(server.url)
    await wire.open(overlap_policy="barge_in_on_speech")
    await wire.send(append(tone(400), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    await wire.until(lambda e: e["type"] == "response.output_audio.delta")
    await wire.send(append(tone(200), event_id="evt_over", **hints))
    decision = (await wire.until("overlap.decision"))[-1]
    assert decision["action"] == action
    await wire.close()


# --- conversation.item.deleted / .truncated echo the request ---


@pytest.mark.parametrize("names", ["ga", "beta"])
async def test_item_answers_echo_the_request(make_server: MakeServer, names: str) -> None:
    server = await make_server(script=SPEAK, event_names=names)
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(400), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    events = await wire.until("rate_limits.updated")
    done = _one(events, "response.done")
    assistant = done["response"]["output"][0]["id"]
    added = ("conversation.item.added", "conversation.item.created")
    items = [e["item"] for e in events if e["type"] == added[names == "beta"]]
    (user,) = [item["id"] for item in items if item["role"] == "user"]
    truncate = {
        "type": "conversation.item.truncate",
        "event_id": "evt_t",
        "item_id": assistant,
        "content_index": 0,
        "audio_end_ms": 100,
    }
    await wire.send(truncate)
    truncated = (await wire.until("conversation.item.truncated"))[-1]
    assert truncated["event"] == truncate
    assert truncated["item_id"] == assistant and truncated["audio_end_ms"] == 100
    delete = {"type": "conversation.item.delete", "item_id": user}  # no event_id: none echoed
    await wire.send(delete)
    deleted = (await wire.until("conversation.item.deleted"))[-1]
    assert deleted == deleted | {"item_id": user, "event": delete}
    await wire.close()


# --- session.resync_required names the session ---


async def test_resync_required_carries_the_session_id(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(journal_bytes=4096))
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    await wire.send(append(tone(1200), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    events = await wire.until("rate_limits.updated")
    resync = _one(events, "session.resync_required")
    assert resync == resync | {
        "session_id": created["session"]["id"],
        "reason": "journal_overflow",
    }
    await wire.close()


# --- the typed metadata keys ---


async def test_response_metadata_keys_are_typed_records(make_server: MakeServer) -> None:
    server = await make_server(script=SPEAK)
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    sid = created["session"]["id"]
    events = await _commit(wire, tone(400), 1)
    meta = _one(events, "response.created")["response"]["metadata"]
    assert meta["audio_duration_ms"] == 0
    assert meta["duplex_event"]["type"] == "response.created"
    assert meta["duplex_event"]["session_id"] == sid
    speak = _one(events, "response.speak")["metadata"]
    assert speak == speak | {"session_id": sid, "epoch": 0, "model_speak": True}
    deltas = [e["metadata"] for e in events if e["type"] == "response.output_audio.delta"]
    assert len(deltas) >= 2
    assert [d["end_of_turn"] for d in deltas] == [False] * (len(deltas) - 1) + [True]
    assert all(d["epoch"] == 0 and d["session_id"] == sid for d in deltas)
    durations = [d["audio_duration_ms"] for d in deltas]
    assert durations == sorted(durations) and durations[0] > 0
    assert [d["playback"]["generated_ms"] for d in deltas] == durations
    done = _one(events, "response.done")["response"]["metadata"]
    assert done == done | {"type": "response.done", "session_id": sid, "epoch": 0}
    assert isinstance(done["committed"], bool)
    assert done["audio_duration_ms"] == durations[-1]
    await wire.close()


async def test_a_listen_records_its_reason(server) -> None:
    """The default script listens to every unit: each `response.listen` says why."""
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    await wire.send(append(tone(1000), event_id="evt_a"))
    listen = (await wire.until("response.listen"))[-1]
    meta = listen["response"]["metadata"]
    assert meta == meta | {
        "type": "response.listen",
        "session_id": created["session"]["id"],
        "epoch": 0,
        "reason": "model_listen",
    }
    await wire.close()


# --- the typed capabilities ---


@pytest.mark.parametrize(
    ("profile", "max_sessions", "lifecycle"),
    [("minicpmo", 1, None), ("minicpmo", 2, None), ("nemotron", 1, "continuous_stream")],
)
async def test_capabilities_state_appends_sessions_and_lifecycle(
    make_server: MakeServer, profile: str, max_sessions: int, lifecycle: str | None
) -> None:
    server = await make_server(profile=profile, limits=Limits(max_sessions=max_sessions))
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    caps = created["session"]["capabilities"]
    assert caps["supports_input_append"] is True
    assert caps["supports_multi_session"] is (max_sessions > 1)
    assert caps.get("response_lifecycle") == lifecycle
    await wire.close()


# --- session and response fields ---


async def test_sample_rate_is_a_synonym_of_sample_rate_hz(server) -> None:
    wire = await Wire.connect(server.url)
    audio = {"output": {"sample_rate_hz": 24000}}
    created, _ = await wire.open(sample_rate_hz=None, sample_rate=24000, audio=audio)
    session = created["session"]
    assert session["sample_rate_hz"] == 24000
    assert session["audio"]["input"]["sample_rate_hz"] == 24000
    assert "sample_rate" not in session  # read, not echoed as an unknown field
    await wire.close()


@pytest.mark.parametrize(
    ("output", "code"),
    [({"type": "audio/pcm"}, None), ("pcm16", None), ("g711_ulaw", "unsupported_audio_format")],
)
async def test_audio_output_format_is_pcm16_only(server, output: Any, code: str | None) -> None:
    wire = await Wire.connect(server.url)
    audio = {"output": {"sample_rate_hz": 24000, "format": output}}
    if code is None:
        created, _ = await wire.open(audio=audio)
        assert created["session"]["audio"]["output"]["format"]["type"] == "audio/pcm"
    else:
        await wire.send({"type": "session.update", "session": {"audio": audio}})
        err = await wire.error(ErrorCode.INVALID_SESSION_CONFIG)  # at open, as upstream
        assert err["error"]["param"] == "audio.output.format"
        assert err["error"]["message"].startswith(code)
    await wire.close()


@pytest.mark.parametrize(
    ("turn_detection", "knob"),
    [
        ({"type": "server_vad", "threshold": 1.5}, "threshold"),
        ({"type": "server_vad", "silence_duration_ms": -1}, "silence_duration_ms"),
        ({"type": "server_vad", "threshold": 0.15}, "threshold"),
        ({"type": "server_vad", "min_speech_duration_ms": -5}, "min_speech_duration_ms"),
        ({"type": "server_vad", "silence_ms": 300}, "silence_ms"),
        ({"type": "server_vad", "threshold": "high"}, "threshold"),
    ],
)
async def test_server_vad_knobs_are_checked(
    server, turn_detection: dict[str, Any], knob: str
) -> None:
    wire = await Wire.connect(server.url)
    await wire.send({"type": "session.update", "session": {"turn_detection": turn_detection}})
    err = await wire.error(ErrorCode.INVALID_SESSION_CONFIG)  # at open, as upstream
    body = err["error"]
    assert body["param"] == "turn_detection" and knob in body["message"]
    assert body["message"].startswith(ErrorCode.UNSUPPORTED_TURN_DETECTION)
    await wire.close()


@pytest.mark.parametrize(
    ("response", "code"),
    [
        ({"output_audio_format": "pcm16"}, None),
        ({"response_format": "pcm"}, None),
        ({"output_audio_format": "wav"}, "unsupported_audio_format"),
        ({"speed": 1.2}, "unsupported_native_response_options"),
    ],
)
async def test_a_responses_output_format(
    make_server: MakeServer, response: dict[str, Any], code: str | None
) -> None:
    server = await make_server(script=SPEAK)
    wire = await answered_turn_request(server.url, response)
    if code is None:
        events = await wire.until("response.done")
        assert events[-1]["response"]["status"] == "completed"
    else:
        err = (await wire.error(code))["error"]
        assert err["event_id"] == "evt_r" and err["param"].startswith("response.")
    await wire.close()
