"""Conformance (#20): the fields vLLM-Omni sends, exact JSON over a real loopback socket.

The session object's live and settable fields, capabilities, the commit fan-out, the
response lifecycle's metadata, playback acks, `session.closed` and `rate_limits.updated`.
"""

from __future__ import annotations

from typing import Any

import pytest

from duplex_client.protocol import ErrorCode
from duplex_client.server import Script
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import Wire, append, silence, tone

SLOW = Script.from_dict({"chunk_interval_ms": 60})


async def _turn(wire: Wire, n: int, ms: int = 1200) -> list[dict[str, Any]]:
    await wire.send(append(tone(ms), event_id=f"evt_a{n}"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": f"evt_c{n}"})
    return await wire.until("rate_limits.updated")


def _one(events: list[dict[str, Any]], etype: str) -> dict[str, Any]:
    found = [e for e in events if e["type"] == etype]
    assert len(found) == 1, [e["type"] for e in events]
    return found[0]


# --- the session object and capabilities ---


async def test_session_object_carries_upstreams_fields(server) -> None:
    wire = await Wire.connect(server.url)
    created, updated = await wire.open()
    for session in (created["session"], updated["session"]):
        assert session["type"] == "realtime" and session["object"] == "realtime.session"
        assert session["turn_state"] == "idle" and session["turn_id"] == 0
        assert session["active_request_id"] is None
        assert session["active_response_id"] is None
        assert session["active_response_turn_id"] is None
        assert session["output_modalities"] == session["modalities"] == ["audio", "text"]
        assert session["response_format"] == "pcm"
        assert session["max_tokens"] is None and session["max_response_output_tokens"] is None
        assert session["speed"] is None and session["tracing"] is None
    await wire.close()


@pytest.mark.parametrize(
    ("profile", "sources"),
    [
        ("minicpmo", ["client_event", "server_policy", "model_native"]),
        ("aura", ["client_event", "server_policy", "model_native"]),
        ("joyai", ["client_event", "server_policy"]),
    ],
)
async def test_capabilities_state_each_profile_honestly(
    make_server: MakeServer, profile: str, sources: list[str]
) -> None:
    server = await make_server(profile=profile)
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    caps = created["session"]["capabilities"]
    assert caps["supports_session_lease"] is True  # resumable: detached sessions are kept
    assert caps["supports_audio_truncate"] is True  # conversation.item.truncate works
    assert caps["supports_client_commit"] is True
    assert caps["input_modes"] == ["append_audio_chunk"]  # input.text.append is chat-lane only
    assert caps["signal_sources"] == sources
    assert caps["target_barge_in_latency_ms"] == caps["chunk_period_ms"]
    await wire.close()


async def test_a_server_without_resume_has_no_lease(make_server: MakeServer) -> None:
    server = await make_server(resumable=False)
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    caps = created["session"]["capabilities"]
    assert caps["supports_session_lease"] is False and caps["supports_session_resume"] is False
    await wire.close()


async def test_settable_session_fields_are_echoed(server) -> None:
    wire = await Wire.connect(server.url)
    _, updated = await wire.open(
        modalities=None,
        output_modalities=["text"],
        max_tokens=5,
        speed=1.25,
        tracing={"workflow_name": "eval"},
        response_format="pcm16",
    )
    session = updated["session"]
    assert session["modalities"] == session["output_modalities"] == ["text"]
    assert session["max_tokens"] == 5 and session["max_response_output_tokens"] == 5
    assert session["speed"] == 1.25 and session["tracing"] == {"workflow_name": "eval"}
    assert session["response_format"] == "pcm"
    assert not {"output_modalities", "max_tokens"} & set(session["extra_body"])
    # audio.output.speed is the GA spelling; a later update changes the echo
    await wire.send({"type": "session.update", "session": {"audio": {"output": {"speed": 0.75}}}})
    again = (await wire.until("session.updated"))[-1]["session"]
    assert again["speed"] == 0.75 and again["tracing"] == {"workflow_name": "eval"}
    await wire.send(
        {"type": "session.update", "session": {"tracing": "auto", "max_output_tokens": "inf"}}
    )
    last = (await wire.until("session.updated"))[-1]["session"]
    assert last["tracing"] == "auto"
    assert last["max_tokens"] is None and last["max_response_output_tokens"] == "inf"
    await wire.close()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("speed", "fast", "speed must be a number"),
        ("speed", 0, "speed must be a number > 0"),
        ("tracing", 5, "tracing must be a string or an object"),
        ("output_modalities", ["video"], "output_modalities[0] must be one of audio, text"),
        ("output_modalities", "audio", "output_modalities must be a list"),
        ("response_format", "wav", "response_format must be pcm"),
        ("response_format", 16, "response_format must be a string"),
        ("max_tokens", 0, "the token cap must be a positive integer or 'inf'"),
        ("max_output_tokens", "lots", "the token cap must be a positive integer or 'inf'"),
    ],
)
async def test_ill_typed_session_fields_are_refused_naming_them(
    server, field: str, value: Any, message: str
) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send({"type": "session.update", "event_id": "evt_u", "session": {field: value}})
    err = (await wire.error(ErrorCode.BAD_EVENT))["error"]
    assert err["param"] == field and err["event_id"] == "evt_u"
    assert err["message"].startswith(message), err
    # nothing changed: the next update still echoes the defaults
    await wire.send({"type": "session.update", "session": {}})
    session = (await wire.until("session.updated"))[-1]["session"]
    assert session["speed"] is None and session["output_modalities"] == ["audio", "text"]
    await wire.close()


async def test_turn_state_and_active_ids_follow_the_session(make_server: MakeServer) -> None:
    server = await make_server(script=SLOW)
    wire = await Wire.connect(server.url)
    await wire.open()

    async def session() -> dict[str, Any]:
        await wire.send({"type": "session.update", "session": {}})
        return (await wire.until("session.updated"))[-1]["session"]

    await wire.send(append(tone(400), event_id="evt_a0"))
    speaking = await session()
    assert speaking["turn_state"] == "user_speaking" and speaking["turn_id"] == 0
    await wire.send(append(tone(800), event_id="evt_a1"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    first = await wire.until("response.output_audio.delta")
    rid = first[-1]["response_id"]
    playing = await session()
    assert playing["turn_state"] == "assistant_playing" and playing["turn_id"] == 1
    assert playing["active_response_id"] == rid
    assert playing["active_request_id"] == "evt_c"  # the commit that asked for the answer
    assert playing["active_response_turn_id"] == 1
    await wire.send({"type": "barge_in", "event_id": "evt_b"})
    await wire.until("rate_limits.updated")
    cut = await session()
    assert cut["turn_state"] == "barge_in" and cut["epoch"] == 1
    assert cut["active_response_id"] is None and cut["active_request_id"] is None
    await wire.close()


# --- the commit fan-out and the items ---


async def test_commit_fan_out_carries_history_and_message(server) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    sid = created["session"]["id"]
    first = await _turn(wire, 0)
    user = next(e for e in first if e["type"] == "conversation.item.added")["item"]
    assert user["role"] == "user" and user["content"][0]["transcript"] == ""
    committed = _one(first, "input_audio_buffer.committed")
    event = committed["event"]
    assert event["session_id"] == sid and event["turn_id"] == 1 and event["epoch"] == 0
    assert event["history_len"] == 1  # the user item
    assert event["realtime_item_id"] == committed["item_id"] == user["id"]
    assert event["message"] == {"role": "user", "content": user["content"]}
    done = [e for e in first if e["type"] == "conversation.item.done"]
    assert [d["item"]["role"] for d in done] == ["user", "assistant"]
    assert done[0]["previous_item_id"] is None
    assert done[1]["previous_item_id"] == user["id"]
    assistant_id = done[1]["item"]["id"]
    second = await _turn(wire, 1)
    event2 = _one(second, "input_audio_buffer.committed")["event"]
    assert event2["history_len"] == 3 and event2["turn_id"] == 2
    done2 = [e for e in second if e["type"] == "conversation.item.done"]
    assert done2[0]["previous_item_id"] == assistant_id
    assert done2[1]["previous_item_id"] == done2[0]["item"]["id"]
    await wire.close()


async def test_partial_commit_names_its_session_and_item(server) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    await wire.send(append(tone(600), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_p", "final": False})
    ack = (await wire.until("input_audio_buffer.committed"))[-1]
    assert ack["final"] is False
    event = ack["event"]
    assert event["session_id"] == created["session"]["id"]
    assert event["realtime_item_id"] == ack["item_id"]
    assert "message" not in event and "history_len" not in event  # nothing entered history
    await wire.close()


# --- the response lifecycle ---


@pytest.mark.parametrize("names", ["ga", "beta"])
async def test_response_metadata_and_rate_limits(make_server: MakeServer, names: str) -> None:
    server = await make_server(event_names=names)
    delta_type = "response.audio.delta" if names == "beta" else "response.output_audio.delta"
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    sid = created["session"]["id"]
    events = await _turn(wire, 0, ms=2000)
    types = [e["type"] for e in events]
    assert types[-2:] == ["response.done", "rate_limits.updated"]
    limits = events[-1]
    assert set(limits) == {"type", "event_id", "server_event_seq", "rate_limits"}
    assert limits["rate_limits"] == []
    assert limits["server_event_seq"] == events[-2]["server_event_seq"] + 1

    start = _one(events, "response.created")
    rid = start["response_id"]
    assert start["response"]["metadata"]["duplex_event"] == {
        "type": "response.created",
        "session_id": sid,
        "response_id": rid,
        "epoch": 0,
        "turn_id": 1,
        "trigger": "commit",
    }
    speak = _one(events, "response.speak")
    assert speak["content_index"] == 0 and speak["output_index"] == 0
    assert speak["metadata"]["session_id"] == sid
    assert speak["metadata"]["model_speak"] is True and speak["metadata"]["epoch"] == 0

    deltas = [e for e in events if e["type"] == delta_type]
    assert len(deltas) >= 2
    pieces = [e["delta"] for e in events if e["type"].endswith("audio_transcript.delta")]
    spoken = ""
    for delta, piece in zip(deltas, pieces, strict=True):
        meta = delta["metadata"]
        spoken += piece
        ms = meta["audio_duration_ms"]
        assert meta["session_id"] == sid and meta["model_speak"] is True
        assert meta["audio_text_marks"] == [{"text_chars": len(spoken), "audio_end_ms": ms}]
        assert meta["playback"] == {
            "generated_ms": ms,
            "sent_ms": ms,
            "played_ms": 0,
            "committed_ms": 0,
        }
    done = events[-2]
    meta = done["response"]["metadata"]
    total = meta["audio_duration_ms"]
    assert total == deltas[-1]["metadata"]["audio_duration_ms"]
    assert meta["type"] == "response.done" and meta["session_id"] == sid
    assert meta["response_id"] == rid and meta["epoch"] == 0
    assert meta["committed"] is True  # commit_all_on_done: the whole answer is in history
    assert meta["playback"] == {
        "generated_ms": total,
        "sent_ms": total,
        "played_ms": 0,
        "committed_ms": total,
    }
    await wire.close()


async def test_every_response_done_is_followed_by_rate_limits(make_server: MakeServer) -> None:
    server = await make_server(script=SLOW)
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(1200), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    await wire.until("response.output_audio.delta")
    await wire.send({"type": "response.cancel", "event_id": "evt_x"})
    events = await wire.until("rate_limits.updated")
    done = events[-2]
    assert done["type"] == "response.done" and done["response"]["status"] != "completed"
    assert done["response"]["metadata"]["type"] == "response.done"
    assert events[-1]["rate_limits"] == []
    await wire.close()


async def test_listen_metadata_is_the_listen_record(make_server: MakeServer) -> None:
    server = await make_server(
        script=Script.from_dict({"rules": [{"on": "commit", "index": 0, "do": "listen"}]})
    )
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    await wire.send(append(silence(600), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    listen = (await wire.until("response.listen"))[-1]
    meta = listen["response"]["metadata"]
    assert meta["type"] == "response.listen"
    assert meta["session_id"] == listen["session_id"] == created["session"]["id"]
    assert meta["epoch"] == listen["epoch"] == 0
    await wire.close()


async def test_ack_only_response_is_uncommitted_until_acknowledged(server) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open(playback_commit_policy="ack_only")
    events = await _turn(wire, 0)
    done = events[-2]
    rid, total = done["response_id"], done["response"]["metadata"]["audio_duration_ms"]
    assert done["response"]["metadata"]["committed"] is False
    await wire.send(
        {"type": "playback.ack", "event_id": "evt_p", "response_id": rid, "played_ms": 1000}
    )
    ack = (await wire.until("playback.acknowledged"))[-1]["event"]
    assert ack["session_id"] == created["session"]["id"] and ack["epoch"] == 0
    assert ack["playback"] == {
        "generated_ms": total,
        "sent_ms": total,
        "played_ms": 1000,
        "committed_ms": 1000,
    }
    assert ack["history_committed"] is True
    # the model's history now holds the user turn and the acknowledged answer
    later = _one(await _turn(wire, 1), "input_audio_buffer.committed")["event"]
    assert later["history_len"] == 3
    await wire.close()


async def test_history_len_counts_only_what_the_model_remembers(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open(playback_commit_policy="ack_only")
    await _turn(wire, 0)  # answered, never acknowledged: not in the model's history
    event = _one(await _turn(wire, 1), "input_audio_buffer.committed")["event"]
    assert event["history_len"] == 2 and event["turn_id"] == 2
    await wire.close()


# --- the end ---


async def test_session_closed_carries_epoch_and_close_record(make_server: MakeServer) -> None:
    server = await make_server(script=SLOW)
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    sid = created["session"]["id"]
    await wire.send(append(tone(1200), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    await wire.until("response.output_audio.delta")
    await wire.send({"type": "barge_in", "event_id": "evt_b"})  # epoch 0 → 1
    await wire.until("rate_limits.updated")
    await wire.send({"type": "session.close", "event_id": "evt_close"})
    code, tail = await wire.closed()
    closed = tail[-1]
    assert code == 1000 and closed["type"] == "session.closed"
    assert closed["session_id"] == sid and closed["epoch"] == 1
    assert closed["reason"] == "client_close"
    assert closed["event"] == {
        "type": "session.closed",
        "session_id": sid,
        "epoch": 1,
        "reason": "client_close",
    }
