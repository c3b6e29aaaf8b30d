"""Raw JSON, upstream's way: handshake errors, cancelled items, output overflow, error codes (#20).

Real loopback sockets against the reference server; each test asserts the exact shapes
vLLM-Omni sends.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from duplex_client.protocol.errors import ErrorCode
from duplex_client.server import Limits, ReferenceServer, Script
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import Wire, append, is_handshake_error, session_update, tone

GENERATIONS = ["ga", "beta"]


# --- handshake errors are nested (vLLM-Omni 0.30.0 `entrypoints/duplex/serving.py`) ---


async def test_handshake_errors_are_nested(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(first_message_timeout_s=0.2))
    cases = [
        ("not json", ErrorCode.INVALID_JSON),
        ("[1]", ErrorCode.BAD_EVENT),
        (session_update(input_audio_format="mp3"), ErrorCode.INVALID_SESSION_CONFIG),
        (
            {"type": "session.resume", "session_id": "duplex-x", "resume_token": "rt_x"},
            ErrorCode.SESSION_RESUME_EXPIRED,
        ),
        ({"type": "session.resume", "session_id": "duplex-x"}, ErrorCode.INVALID_SESSION_RESUME),
        (None, ErrorCode.CONFIG_TIMEOUT),
    ]
    for first, code in cases:
        wire = await Wire.connect(server.url)
        if first is not None:
            await wire.send(first)
        err = await wire.recv()
        # upstream's typed error event: `{type, event_id, error: {type, code, message, param?}}`
        assert is_handshake_error(err, code), err
        assert set(err) == {"type", "event_id", "error"}
        assert set(err["error"]) <= {"type", "code", "message", "param"}
        assert err["error"]["message"]  # one line naming what is wrong
        close_code, rest = await wire.closed()
        assert close_code == 1000 and rest == []
    assert server.session_ids() == []


async def test_errors_after_the_handshake_stay_nested(server: ReferenceServer) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    err = await wire.error(ErrorCode.INPUT_AUDIO_BUFFER_EMPTY)
    assert err["error"]["type"] == "invalid_request_error"
    assert err["error"]["event_id"] == "evt_c" and "code" not in err
    await wire.close()


# --- cancelled output items ---


@pytest.mark.parametrize("names", GENERATIONS)
async def test_cancelled_output_items_say_cancelled(make_server: MakeServer, names: str) -> None:
    script = Script.from_dict(
        {
            "chunk_ms": 200,
            "chunk_interval_ms": 500,
            "defaults": {"commit": {"do": "speak", "text": "a b c d e f g h"}},
        }
    )
    server = await make_server(script=script, event_names=names)
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(400), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    await wire.until(lambda e: e["type"].endswith("audio.delta"))
    await wire.send({"type": "response.cancel", "event_id": "evt_x"})
    events = await wire.until("response.done")
    output_done = next(e for e in events if e["type"] == "response.output_item.done")
    item_done = next(e for e in events if e["type"] == "conversation.item.done")
    done = events[-1]["response"]
    assert done["status"] == "cancelled"
    assert output_done["item"]["status"] == "cancelled"
    assert item_done["item"]["status"] == "cancelled"
    assert [o["status"] for o in done["output"]] == ["cancelled"]
    await wire.close()


# --- output overflow ---


async def test_output_overflow_is_output_backpressure(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(output_buffer_bytes=10_000))
    wire = await Wire.connect(server.url)
    await wire.open()
    # one audio delta (~38 KB) is above the 10 KB buffer: the batch holding it is refused
    await wire.send(append(tone(600), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    code, events = await wire.closed()
    assert [e["type"] for e in events][-3:] == ["error", "response.done", "session.closed"]
    err, done, closed = events[-3:]
    assert err["error"] == {
        "type": "rate_limit_error",
        "code": "output_backpressure",
        "message": "output buffer overflow: the client is not reading",
    }
    assert done["response"]["status"] == "failed"
    assert done["response"]["status_details"] == {"type": "failed", "reason": "output_backpressure"}
    assert closed["reason"] == "output_backpressure"
    assert code == 1008
    # the ending the client never got is re-sent failed, with that response's identity
    sent = server.session().conversation.responses
    assert done["response_id"] == done["response"]["id"] and done["response_id"] in sent


async def test_over_long_close_notice_is_compacted(server: ReferenceServer) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    # upstream's session.closed carries the client's reason; a notice above 4 KiB is compacted
    await wire.send({"type": "session.close", "event_id": "evt_c", "reason": "x" * 5000})
    code, events = await wire.closed()
    assert events[-1]["type"] == "session.closed"
    assert events[-1]["reason"] == "close_details_exceed_output_limit"
    assert code == 1000
    assert server.session().life.close_reason == "close_details_exceed_output_limit"
    again = await Wire.connect(server.url)
    await again.open()
    await again.send({"type": "session.close", "reason": "done for today"})
    _, events = await again.closed()
    assert events[-1]["reason"] == "done for today"


# --- session_exists, unknown_session, invalid_session_update ---


async def test_session_exists_when_an_id_is_taken(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(max_sessions=2))
    server.registry.new_session_id = lambda: "duplex-" + "1" * 32
    first = await Wire.connect(server.url)
    created, _ = await first.open()
    assert created["session"]["id"] == "duplex-" + "1" * 32
    second = await Wire.connect(server.url)
    await second.send(session_update())
    err = await second.recv()
    assert is_handshake_error(err, ErrorCode.SESSION_EXISTS)
    close_code, _ = await second.closed()
    assert close_code == 1000
    assert server.session_ids() == ["duplex-" + "1" * 32]  # the first one is untouched
    await first.close()


async def test_unknown_and_ended_sessions_both_expired_on_resume(server: ReferenceServer) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    await wire.send({"type": "session.close"})
    await wire.closed()
    resume = {
        "type": "session.resume",
        "resume_token": created["resume_token"],
        "last_received_server_event_seq": 0,
    }
    ended = await Wire.connect(server.url)
    await ended.send(resume | {"session_id": created["session"]["id"]})
    assert is_handshake_error(await ended.recv(), ErrorCode.SESSION_RESUME_EXPIRED)
    never = await Wire.connect(server.url)
    await never.send(resume | {"session_id": "duplex-" + "f" * 32})
    err = await never.recv()
    # upstream answers an unknown id like an expired one ("Unknown or expired duplex session")
    assert is_handshake_error(err, ErrorCode.SESSION_RESUME_EXPIRED)
    assert err["error"]["param"] == "session_id"


@pytest.mark.parametrize("session", [None, "nope", [1]])
async def test_invalid_session_update_mid_session(server: ReferenceServer, session) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    event = {"type": "session.update", "event_id": "evt_u"}
    if session is not None:
        event["session"] = session
    await wire.send(event)
    err = await wire.error(ErrorCode.INVALID_SESSION_UPDATE)
    assert err["error"]["type"] == "invalid_request_error"
    assert err["error"]["param"] == "session" and err["error"]["event_id"] == "evt_u"
    # request-local: the session goes on
    await wire.send({"type": "session.heartbeat"})
    await wire.until("session.heartbeat_ack")
    await wire.close()


# --- a model whose persona, voice or audio are fixed (PersonaPlex / Nemotron-style) ---


def _fixed(server: ReferenceServer, **flags: bool) -> None:
    """Sessions opened from now on get a profile with these flags (as upstream models have)."""
    server.registry.profile = replace(server.registry.profile, **flags)


async def test_persona_and_voice_fixed_at_open(server: ReferenceServer) -> None:
    _fixed(server, fixed_persona=True, fixed_voice=True)
    wire = await Wire.connect(server.url)
    await wire.open(instructions="You are a pirate.", voice="NATF2")
    cases = [
        (
            {"instructions": "You are a judge."},
            ErrorCode.PERSONA_UPDATE_UNSUPPORTED,
            "instructions",
        ),
        ({"voice": "NATM1"}, ErrorCode.VOICE_UPDATE_UNSUPPORTED, "voice"),
    ]
    for session, code, param in cases:
        await wire.send({"type": "session.update", "event_id": "evt_u", "session": session})
        err = await wire.error(code)
        assert err["error"]["type"] == "invalid_request_error"
        assert err["error"]["param"] == param
    # unchanged values (and other fields) are accepted
    update = {"instructions": "You are a pirate.", "voice": "NATF2", "temperature": 0.5}
    await wire.send({"type": "session.update", "event_id": "evt_ok", "session": update})
    updated = (await wire.until("session.updated"))[-1]["session"]
    assert updated["instructions"] == "You are a pirate." and updated["voice"] == "NATF2"
    await wire.close()


async def test_audio_truncate_unsupported(server: ReferenceServer) -> None:
    _fixed(server, supports_audio_truncate=False)
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    assert created["session"]["capabilities"]["supports_audio_truncate"] is False
    await wire.send(append(tone(300), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    rid = (await wire.until("response.done"))[-1]["response_id"]
    await wire.send(
        {
            "type": "conversation.item.truncate",
            "event_id": "evt_t",
            "item_id": f"item_{rid}",
            "content_index": 0,
            "audio_end_ms": 100,
        }
    )
    err = await wire.error(ErrorCode.AUDIO_TRUNCATE_UNSUPPORTED)
    assert err["error"]["event_id"] == "evt_t"
    ack = {"type": "playback.ack", "event_id": "evt_p", "response_id": rid, "played_ms": 100}
    await wire.send(ack | {"truncate": True})
    await wire.error(ErrorCode.AUDIO_TRUNCATE_UNSUPPORTED)
    # ordinary acks still work
    await wire.send(ack | {"event_id": "evt_p2"})
    assert (await wire.until("playback.acknowledged"))[-1]["played_ms"] == 100
    await wire.close()


async def test_truncate_advertised_where_supported(server: ReferenceServer) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    assert created["session"]["capabilities"]["supports_audio_truncate"] is True
    await wire.close()
