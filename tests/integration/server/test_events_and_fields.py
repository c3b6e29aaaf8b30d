"""Issue #29 point 10, raw JSON over loopback: events and fields as vLLM-Omni 0.30.0 sends them.

The response's `status_details` (`engine/duplex/realtime_events.py`: a finished model turn is
`{type: "completed", reason: "stop"}`), the assistant item's `output_audio` part with its
`audio_duration_ms` and `audio_text_marks`, a text part next to the audio at
`content_index: 1`, the `vllm_omni` record in audio-delta metadata; the session fields
`initial_user_text`, `audio.output.voice`, `audio.input.noise_reduction` /
`audio.input.channels`, the overlap and playback settings inside `extra_body`, and the
plugins' server-owned `extra_body` keys (`engine/duplex/config.py`, `engine/duplex/plugin.py`).
"""

from __future__ import annotations

from typing import Any

import pytest

from duplex_client.protocol import ErrorCode
from duplex_client.server import Script
from duplex_client.server.response_meta import RUNTIME_IMPL
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import Wire, append, tone

SHOW = Script.from_dict(
    {"defaults": {"commit": {"do": "speak", "text": "two words here", "show": "2 words"}}}
)
LISTEN = Script.from_dict({"defaults": {"response.create": {"do": "listen"}}})
BETA = {
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
    "response.output_audio.delta": "response.audio.delta",
}


def _of(events: list[dict[str, Any]], etype: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == etype]


async def _turn(wire: Wire, **session: Any) -> list[dict[str, Any]]:
    await wire.open(**session)
    await wire.send(append(tone(1200), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    return await wire.until("rate_limits.updated")


@pytest.mark.parametrize("names", ["ga", "beta"])
async def test_a_spoken_turn_with_text_beside_its_audio(
    make_server: MakeServer, names: str
) -> None:
    server = await make_server(script=SHOW, event_names=names)
    name = (lambda t: BETA.get(t, t)) if names == "beta" else (lambda t: t)
    wire = await Wire.connect(server.url)
    events = await _turn(wire)
    types = [e["type"] for e in events]
    added = _of(events, "response.content_part.added")
    assert [(a["content_index"], a["part"]) for a in added] == [
        (0, {"type": "audio", "transcript": ""}),
        (1, {"type": "text", "text": ""}),
    ]
    (text,) = _of(events, name("response.output_text.delta"))
    assert text["content_index"] == 1 and text["delta"] == "2 words"
    (text_done,) = _of(events, name("response.output_text.done"))
    assert text_done["content_index"] == 1 and text_done["text"] == "2 words"
    parts_done = _of(events, "response.content_part.done")
    assert [(p["content_index"], p["part"]["type"]) for p in parts_done] == [
        (0, "audio"),
        (1, "text"),
    ]
    # the order upstream's terminal events take: audio part, text, text part, then the item
    assert types.index(name("response.output_text.done")) > types.index(
        "response.content_part.done"
    )
    deltas = _of(events, name("response.output_audio.delta"))
    assert all(d["metadata"]["vllm_omni"]["runtime_impl"] == RUNTIME_IMPL for d in deltas)
    assert deltas[0]["metadata"]["vllm_omni"]["model_turn_id"] == 1
    (done,) = _of(events, "response.done")
    assert done["response"]["status_details"] == {"type": "completed", "reason": "stop"}
    item = done["response"]["output"][0]
    audio, shown = item["content"]
    total = done["response"]["metadata"]["audio_duration_ms"]
    assert audio["type"] == "output_audio" and audio["transcript"] == "two words here"
    assert audio["audio_duration_ms"] == total > 0
    marks = [d["metadata"]["audio_text_marks"][0] for d in deltas]
    assert audio["audio_text_marks"] == marks and marks[-1]["audio_end_ms"] == total
    assert shown == {"type": "output_text", "text": "2 words"}
    assert _of(events, "response.output_item.done")[0]["item"] == item
    await wire.close()


async def test_a_listen_states_no_reason_and_text_only_parts_carry_text(
    make_server: MakeServer,
) -> None:
    server = await make_server(script=LISTEN)
    wire = await Wire.connect(server.url)
    await wire.open(extra_body={"auto_response": False})
    await wire.send(append(tone(1200), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    await wire.send({"type": "response.create", "event_id": "evt_r"})
    events = await wire.until("rate_limits.updated")
    assert _of(events, "response.listen")
    (done,) = _of(events, "response.done")
    assert done["response"]["status"] == "completed"
    assert done["response"]["status_details"] is None  # no model turn finished
    await wire.close()
    server = await make_server(script=SHOW)
    wire = await Wire.connect(server.url)
    events = await _turn(wire, modalities=["text"])
    (part,) = _of(events, "response.content_part.done")
    assert part["part"] == {"type": "text", "text": "two words here"}
    (done,) = _of(events, "response.done")
    assert done["response"]["output"][0]["content"] == [
        {"type": "output_text", "text": "two words here"}
    ]
    await wire.close()


async def test_upstreams_session_fields_are_taken(make_server: MakeServer) -> None:
    server = await make_server(profile="joyai")
    wire = await Wire.connect(server.url)
    audio = {
        "input": {
            "sample_rate_hz": 16000,
            "channels": 1,
            "noise_reduction": {"type": "near_field"},
        },
        "output": {"sample_rate_hz": 24000, "voice": "alloy"},
    }
    extra = {"overlap_policy": "barge_in_on_speech", "playback_commit_policy": "ack_only"}
    created, _ = await wire.open(
        audio=audio, initial_user_text="what do you see?", extra_body=extra
    )
    session = created["session"]
    assert session["voice"] == "alloy" and session["audio"]["output"]["voice"] == "alloy"
    a_in = session["audio"]["input"]
    assert a_in["channels"] == 1 and a_in["noise_reduction"] == {"type": "near_field"}
    assert session["input_audio_noise_reduction"] == {"type": "near_field"}
    # extra_body's settings win over the session's (`turn_detection: null` said listen_only)
    assert session["overlap_policy"] == "barge_in_on_speech"
    assert session["playback_commit_policy"] == "ack_only"
    assert "initial_user_text" not in session  # upstream does not echo it either
    opening = server.history()[0]
    assert opening["role"] == "user"
    assert opening["content"] == [{"type": "input_text", "text": "what do you see?"}]
    await wire.send(
        {"type": "session.update", "session": {"audio": {"input": {"noise_reduction": None}}}}
    )
    updated = (await wire.until("session.updated"))[-1]["session"]
    assert "noise_reduction" not in updated["audio"]["input"]  # null clears it, as upstream
    await wire.close()


@pytest.mark.parametrize(
    ("profile", "session", "code", "param"),
    [
        ("minicpmo", {"extra_body": {"initial_user_text": "hi"}}, "runtime", "initial_user_text"),
        ("personaplex", {"extra_body": {"native_duplex": True}}, "runtime", "native_duplex"),
        ("nemotron", {"extra_body": {"nvc_max_model_len": 9}}, "runtime", "nvc_max_model_len"),
        # a handshake refusal is invalid_session_config, the field's own code leading (point 3)
        ("minicpmo", {"audio": {"input": {"channels": 2}}}, "session", "channels"),
        ("minicpmo", {"extra_body": {"overlap_policy": "shout"}}, "runtime", "overlap_policy"),
    ],
)
async def test_refused_session_fields(
    make_server: MakeServer, profile: str, session: dict[str, Any], code: str, param: str
) -> None:
    server = await make_server(profile=profile)
    wire = await Wire.connect(server.url)
    await wire.send({"type": "session.update", "session": session})
    want = {
        "runtime": ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
        "session": ErrorCode.INVALID_SESSION_CONFIG,
    }[code]
    err = await wire.error(want)
    assert err["error"]["param"].endswith(param)
    if code == "session":
        assert err["error"]["message"].startswith(ErrorCode.UNSUPPORTED_AUDIO_FORMAT)
    if code == "runtime" and param != "overlap_policy":
        assert "server-owned" in err["error"]["message"]
