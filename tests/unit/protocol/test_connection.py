"""`ClientConnection` alone: frames in, effects out; no socket, no event loop, no sleeping."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duplex_client.protocol import client_events as ce
from duplex_client.protocol import server_events as se
from duplex_client.protocol.codec import b64decode
from duplex_client.protocol.errors import (
    DuplexClientError,
    DuplexProtocolError,
    DuplexSessionClosedError,
)
from duplex_client.protocol.events import parse_server_event
from duplex_client.protocol.session import (
    ClientConnection,
    Closed,
    Decided,
    Deliver,
    LocalProtocolError,
    Output,
    Reconnect,
    Resend,
    ResponseState,
    Resynced,
    ScheduleAck,
    ScheduleHeartbeat,
    SchedulePlaybackAcks,
    Send,
    SessionConfig,
    SessionEndedError,
    Settled,
    State,
)

CAPS = {"supports_playback_ack": True, "required_input_modalities": [], "max_frames_per_append": 2}
PCM_100MS = b"\x01\x00" * 1600


def frame(event: dict[str, Any]) -> str:
    return json.dumps(event)


def created(**extra: Any) -> str:
    session = {"id": "duplex-1", "capabilities": CAPS, "state": "open"}
    return frame({"type": "session.created", "resume_token": "rt_1", "session": session, **extra})


def opened(*, resumable: bool = True, **options: Any) -> ClientConnection:
    conn = ClientConnection(model="m", **options)
    conn.start(resumable=resumable)
    conn.receive_data(created())
    return conn


def sent(send: Send | None) -> dict[str, Any]:
    assert send is not None
    payload: dict[str, Any] = json.loads(send.data)
    return payload


def resumed(**fields: Any) -> se.SessionResumed:
    event = parse_server_event({"type": "session.resumed", **fields})
    assert isinstance(event, se.SessionResumed)
    return event


def written(conn: ClientConnection, send: Send) -> str:
    """As the shell does after writing a kept input: mark it, return its id."""
    assert send.entry is not None and conn.must_write(send.entry)
    conn.wrote(send.entry, conn.attachment.number)
    assert send.event_id is not None
    return send.event_id


# --- states ---


def test_the_handshake_opens_the_session_and_asks_for_a_heartbeat() -> None:
    conn = ClientConnection(model="m", heartbeat_interval_s=30.0)
    assert conn.state is State.CONNECTING and not conn.is_open
    update = sent(conn.start())
    assert update["type"] == "session.update" and update["session"]["model"] == "m"
    assert conn.receive_data(frame({"type": "rate_limits.updated"})) == Output()  # not yet
    out = conn.receive_data(created(attachment_generation=1))
    assert conn.state is State.OPEN and conn.is_open and conn.writable
    assert [type(e) for e in out.effects] == [Deliver, ScheduleHeartbeat]
    assert out.events[0].type == "session.created"
    assert out.of(ScheduleHeartbeat) == [ScheduleHeartbeat(30.0)]
    assert conn.session_id == "duplex-1" and conn.attachment.generation == 1
    assert conn.capabilities.supports_playback_ack and conn.attachment.number == 1


def test_the_heartbeat_timer_beats_and_re_arms_but_not_while_resuming() -> None:
    conn = opened(heartbeat_interval_s=15.0)
    out = conn.heartbeat()
    (beat,) = out.of(Send)
    assert sent(beat)["type"] == "session.heartbeat" and beat.droppable
    assert out.of(ScheduleHeartbeat) == [ScheduleHeartbeat(15.0)]
    conn.connection_lost()
    assert conn.heartbeat() == Output((ScheduleHeartbeat(15.0),))
    conn.terminate("gone")
    assert conn.heartbeat() == Output()  # the timer stops
    quiet = ClientConnection(model="m", heartbeat_interval_s=None)
    quiet.start()
    assert quiet.receive_data(created()).of(ScheduleHeartbeat) == []
    assert quiet.heartbeat() == Output()


def test_calls_in_the_wrong_state_raise_a_local_protocol_error() -> None:
    conn = ClientConnection(model="m")
    for call in (
        lambda: conn.append(PCM_100MS),
        lambda: conn.send(ce.InputAudioBufferClear()),
        lambda: conn.close(),
        lambda: conn.resume_request(),
        lambda: conn.flushed(),
    ):
        with pytest.raises(LocalProtocolError) as info:
            call()
        assert info.value.state is State.CONNECTING
        assert isinstance(info.value, DuplexClientError)
        assert not isinstance(info.value, DuplexSessionClosedError)
    assert conn.input.samples == 0
    conn = opened()
    with pytest.raises(LocalProtocolError, match="cannot start in state OPEN"):
        conn.start()
    with pytest.raises(LocalProtocolError, match="needs RESUMING"):
        conn.next_resend()
    conn.connection_lost(1006)
    assert conn.state is State.RESUMING
    with pytest.raises(LocalProtocolError, match="cannot close in state RESUMING"):
        conn.close()


def test_an_append_refuses_a_keyword_it_does_not_take_before_counting() -> None:
    conn = opened()
    with pytest.raises(TypeError, match="unexpected keyword argument 'is_spech'"):
        conn.append(PCM_100MS, is_spech=True)  # type: ignore[call-arg]
    assert conn.input.samples == 0
    assert sent(conn.append(PCM_100MS, is_speech=True, unit_index=3))["unit_index"] == 3


def test_after_the_end_every_send_raises_a_closed_session_error() -> None:
    conn = opened()
    out = conn.receive_data(frame({"type": "session.expired", "reason": "idle_ttl_expired"}))
    assert conn.state is State.CLOSED and conn.closed_reason == "idle_ttl_expired"
    assert out.effects[-1] == Closed("idle_ttl_expired") and out.events[0].type == "session.expired"
    with pytest.raises(SessionEndedError) as info:
        conn.append(PCM_100MS)
    assert isinstance(info.value, DuplexSessionClosedError)
    assert isinstance(info.value, LocalProtocolError) and info.value.state is State.CLOSED
    assert info.value.reason == "idle_ttl_expired" and conn.input.samples == 0
    with pytest.raises(LocalProtocolError):
        conn.receive_data(frame({"type": "rate_limits.updated"}))
    assert conn.ack() is None and conn.heartbeat() == Output() and conn.playback_acks() == []
    assert conn.close() is None and conn.terminate("again") == Output()


def test_a_refused_handshake_raises_and_terminate_ends_without_a_reason() -> None:
    conn = ClientConnection(model="m")
    conn.start()
    error = {"type": "invalid_request_error", "code": "ref_audio_required", "message": "voice"}
    with pytest.raises(DuplexProtocolError) as info:
        conn.receive_data(frame({"type": "error", "error": error}))
    assert info.value.code == "ref_audio_required" and conn.state is State.CONNECTING
    with pytest.raises(DuplexProtocolError, match="not a duplex handler"):
        conn.receive_data(frame({"type": "session.created", "session": {"id": "x"}}))
    out = conn.terminate("handshake failed")
    assert out.of(Closed) == [Closed("handshake failed")] and conn.state is State.CLOSED
    assert conn.closed_reason is None  # a session that never opened has no closed reason


def test_close_handshake() -> None:
    conn = opened()
    close = sent(conn.close("bye"))
    assert close["type"] == "session.close" and close["reason"] == "bye"
    assert conn.state is State.CLOSING and conn.writable and conn.close() is None
    conn.send(ce.InputAudioBufferClear())  # racing commands still go (the server refuses them)
    out = conn.receive_data(
        frame({"type": "session.closed", "reason": "client_close", "server_event_seq": 3})
    )
    assert [type(e) for e in out.effects] == [Deliver, Closed]  # a terminal event is not acked
    assert conn.state is State.CLOSED and conn.closed_reason == "client_close"
    other = opened()
    other.close()
    assert other.connection_lost(1000).of(Closed) == [Closed("client_close")]  # never resumed


# --- seq / ack (§6) ---


def test_acks_are_scheduled_once_idle_and_replays_are_dropped() -> None:
    conn = opened()
    first = conn.receive_data(frame({"type": "rate_limits.updated", "server_event_seq": 5}))
    assert first.of(ScheduleAck) == [ScheduleAck()] and len(first.events) == 1
    second = conn.receive_data(frame({"type": "rate_limits.updated", "server_event_seq": 6}))
    assert second.of(ScheduleAck) == []  # one is armed already: coalesced
    assert conn.receive_data(frame({"type": "x", "server_event_seq": 6})) == Output()
    assert conn.receive_data(frame({"type": "x", "server_event_seq": 2})) == Output()
    ack = sent(conn.ack())
    assert ack["type"] == "session.event_ack" and ack["server_event_seq"] == 6
    assert conn.ack() is None  # nothing new since
    third = conn.receive_data(frame({"type": "x", "server_event_seq": 7}))
    assert third.of(ScheduleAck) == [ScheduleAck()]  # the timer fired: the next one re-arms
    assert conn.ack() is not None and conn.seq.last == 7
    unsequenced = conn.receive_data(frame({"type": "session.heartbeat_ack"}))
    assert unsequenced.of(ScheduleAck) == [] and len(unsequenced.events) == 1


def test_ack_every_acks_at_once_after_n_events() -> None:
    conn = opened(ack_every=3)
    outs = [conn.receive_data(frame({"type": "x", "server_event_seq": s})) for s in (1, 2, 3, 4)]
    assert [len(o.of(Send)) for o in outs] == [0, 0, 1, 0]
    assert sent(outs[2].of(Send)[0])["server_event_seq"] == 3
    assert outs[2].of(Send)[0].droppable
    assert outs[0].of(ScheduleAck) and not outs[3].of(ScheduleAck)  # still armed
    assert sent(conn.ack())["server_event_seq"] == 4


@given(
    st.lists(
        st.one_of(st.integers(1, 40), st.none(), st.just("ack")),
        max_size=80,
    ),
    st.one_of(st.none(), st.integers(1, 5)),
)
def test_any_interleaving_of_seqs_gives_monotonic_acks_and_no_duplicate(
    steps: list[int | str | None], ack_every: int | None
) -> None:
    conn = opened(ack_every=ack_every)
    acks: list[int] = []
    delivered: list[int] = []
    seen = 0
    for step in steps:
        if step == "ack":
            if (send := conn.ack()) is not None:
                acks.append(sent(send)["server_event_seq"])
            continue
        event: dict[str, Any] = {"type": "rate_limits.updated"}
        if isinstance(step, int):
            event["server_event_seq"] = step
        out = conn.receive_data(frame(event))
        delivered += [e.server_event_seq for e in out.events if e.server_event_seq is not None]
        acks += [sent(s)["server_event_seq"] for s in out.of(Send)]
        if isinstance(step, int):
            seen = max(seen, step)
    assert delivered == sorted(set(delivered))  # each seq once, in order
    assert acks == sorted(set(acks))  # strictly increasing
    assert all(a <= seen for a in acks) and conn.seq.last == seen
    final = conn.ack()
    if seen > (acks[-1] if acks else 0):
        assert sent(final)["server_event_seq"] == seen
    else:
        assert final is None


# --- the outbox and resume (§6.1) ---


def test_a_resume_resends_only_unacknowledged_input_in_order_then_queued_input() -> None:
    conn = opened()
    ids = [written(conn, conn.append(PCM_100MS)) for _ in range(3)]
    commit = conn.send(ce.InputAudioBufferCommit())
    ids.append(written(conn, commit))
    later = written(conn, conn.append(PCM_100MS))
    conn.receive_data(frame({"type": "input_audio_buffer.committed", "client_event_id": ids[3]}))
    assert len(conn.outbox) == 1  # the acknowledged commit confirmed itself and all before
    out = conn.connection_lost(1006)
    assert out.of(Reconnect) == [Reconnect("disconnect (1006)")] and not conn.writable
    assert conn.is_open and conn.state is State.RESUMING
    queued = conn.append(PCM_100MS)
    assert queued.entry is not None and not conn.must_write(queued.entry) and not queued.hold
    assert conn.heartbeat().of(Send) == []  # skipped while disconnected
    request = conn.resume_request()
    assert (request.session_id, request.resume_token) == ("duplex-1", "rt_1")
    view = {"last_event_id": ids[3], "audio_end_ms": 300, "append_count": 3}
    out = conn.resumed(resumed(resume_token="rt_2", attachment_generation=2, input=view), 1)
    assert [e.type for e in out.events] == ["connection.resumed", "session.resumed"]
    assert out.of(Resend) == [Resend(0)] and conn.attachment.token == "rt_2"
    order = []
    while (entry := conn.next_resend()) is not None:
        order.append((entry.event_id, entry.written))
        conn.wrote(entry, conn.attachment.number)
    assert order == [(later, True), (queued.event_id, False)]  # resend first, then the queued
    conn.flushed()
    assert conn.state is State.OPEN and conn.attachment.number == 2
    assert conn.attachment.generation == 2 and conn.input.audio_end_ms == 500


def test_the_outbox_tells_which_inputs_the_server_confirmed() -> None:
    """A commit's ack confirms it and all before; a resume's view what the server has (#32)."""
    conn = opened()
    confirmed: list[str] = []
    conn.outbox.on_confirmed = confirmed.append
    ids = [written(conn, conn.append(PCM_100MS)) for _ in range(2)]
    ids.append(written(conn, conn.send(ce.InputAudioBufferCommit())))
    later = [written(conn, conn.append(PCM_100MS)) for _ in range(2)]
    conn.receive_data(frame({"type": "input_audio_buffer.committed", "client_event_id": ids[2]}))
    assert confirmed == ids
    conn.connection_lost(1006)
    view = {"last_event_id": later[0], "audio_end_ms": 300, "append_count": 3}
    conn.resumed(resumed(resume_token="rt_2", attachment_generation=2, input=view), 1)
    assert confirmed == [*ids, later[0]]  # the second one is resent, not confirmed


def test_a_resume_without_the_servers_view_resends_nothing_already_written() -> None:
    conn = opened()
    written(conn, conn.append(PCM_100MS))
    conn.connection_lost()
    queued = conn.append(PCM_100MS)
    out = conn.resumed(resumed(), 1)
    assert out.of(Resend) == [Resend(unresolved=1)]
    entry = conn.next_resend()
    assert entry is not None and entry.event_id == queued.event_id


def test_too_much_queued_input_asks_the_sender_to_hold() -> None:
    conn = opened(max_queued_bytes=1000)
    conn.connection_lost()
    assert not conn.append(PCM_100MS).hold  # nothing queued before it
    assert conn.append(PCM_100MS).hold


def test_a_failed_write_holds_sends_and_a_stale_one_does_not() -> None:
    conn = opened()
    conn.write_failed(attachment=0)  # an old socket
    assert conn.state is State.OPEN
    conn.write_failed(conn.attachment.number)
    assert conn.state is State.RESUMING
    assert conn.connection_lost().of(Reconnect)  # the reader notices next


def test_resync_required_forgets_the_token_and_outbox_so_the_next_drop_ends_it() -> None:
    conn = opened()
    written(conn, conn.append(PCM_100MS))
    out = conn.receive_data(frame({"type": "session.resync_required", "reason": "journal_gap"}))
    assert out.of(Resynced) == [Resynced("journal_gap")] and len(out.events) == 1
    assert not conn.resumable and conn.attachment.token is None and len(conn.outbox) == 0
    assert conn.append(PCM_100MS).entry is None  # no longer kept for resending
    out = conn.connection_lost(1006)
    assert out.of(Closed) == [Closed("disconnect (1006)")] and conn.state is State.CLOSED


def test_a_failed_resume_ends_the_session() -> None:
    conn = opened()
    conn.connection_lost()
    out = conn.resume_failed("disconnect; resume refused", fatal=True)
    assert out.of(Closed) == [Closed("disconnect; resume refused")]
    assert conn.attachment.token is None and conn.closed_reason == "disconnect; resume refused"


def test_without_resumption_nothing_is_kept_and_a_drop_ends_the_session() -> None:
    conn = opened(resumable=False)
    assert conn.append(PCM_100MS).entry is None and len(conn.outbox) == 0
    assert conn.connection_lost().of(Closed) == [Closed("disconnect")]


# --- tolerance, outcomes, responses ---


@pytest.mark.parametrize(
    "data",
    [
        b"\x00\x01binary",
        "{not json",
        "[1, 2, 3]",
        "null",
        frame({"no": "type"}),
        frame({"type": "duplex.telemetry", "value": [1, 2]}),
        frame({"type": "rate_limits.updated", "server_event_seq": "seven"}),
        frame({"type": "input_audio_buffer.committed", "client_event_id": 5, "audio_end_ms": "x"}),
        frame({"type": "error", "error": "flat message", "code": 7}),
        frame({"type": "response.output_audio.delta", "response_id": 3, "delta": "%%%"}),
        frame({"type": "response.done", "response": "not an object"}),
        frame({"type": "session.updated", "session": [1]}),
    ],
)
def test_unknown_and_ill_typed_server_frames_are_tolerated(data: str | bytes) -> None:
    conn = opened()
    out = conn.receive_data(data)
    assert conn.state is State.OPEN
    assert not out.of(Closed) and not out.of(Settled)
    assert len(out.events) <= 1


def test_outcomes_are_settled_and_kept_for_late_waiters() -> None:
    conn = opened()
    commit = conn.send(ce.InputAudioBufferCommit())
    assert commit.event_id is not None
    acked = conn.receive_data(
        frame({"type": "input_audio_buffer.committed", "client_event_id": commit.event_id})
    )
    (settled,) = acked.of(Settled)
    assert settled.event_id == commit.event_id and conn.outcomes.get(commit.event_id) is not None
    bad = conn.send(ce.InputAudioBufferCommit())
    assert bad.event_id is not None
    err = {"code": "input_audio_buffer_empty", "message": "empty", "event_id": bad.event_id}
    out = conn.receive_data(frame({"type": "error", "error": err}))
    assert out.of(Settled)[0].outcome.type == "error" and conn.errors[-1].code == err["code"]
    assert bad.entry is not None and len(conn.outbox) == 0  # the refused commit is forgotten


def test_decisions_and_playback_acks_come_out_as_effects() -> None:
    conn = opened()
    conn.receive_data(frame({"type": "response.created", "response": {"id": "resp_1"}}))
    speak = conn.receive_data(frame({"type": "response.speak", "response_id": "resp_1"}))
    (decided,) = speak.of(Decided)
    assert decided.handle.response_id == "resp_1" and decided.handle.decision == "speak"
    done = {"type": "response.done", "response": {"id": "resp_1", "status": "completed"}}
    assert conn.receive_data(frame(done)).of(SchedulePlaybackAcks) == [SchedulePlaybackAcks()]
    (ack,) = conn.playback_acks()
    assert sent(ack)["type"] == "playback.ack" and sent(ack)["response_id"] == "resp_1"
    assert conn.playback_acks() == []  # acked already
    conn.receive_data(frame({"type": "response.created", "response": {"id": "resp_2"}}))
    out = conn.terminate("disconnect")
    assert [type(e) for e in out.effects] == [Decided, Closed]  # undecided handles: listen
    assert out.of(Decided)[0].handle.decision == "listen"


def test_a_cancel_fences_the_active_response_and_a_final_commit_seals() -> None:
    conn = opened()
    conn.receive_data(frame({"type": "response.created", "response": {"id": "resp_c"}}))
    conn.send(ce.ResponseCancel())
    assert conn.tracker.handles["resp_c"].fenced
    conn.send(ce.InputAudioBufferCommit())
    done = {"type": "response.done", "response": {"id": "resp_c", "status": "cancelled"}}
    conn.receive_data(frame(done))
    assert conn.tracker.handles["resp_c"].sealed  # finished while our commit was in flight


def test_appends_count_audio_at_once_and_a_withdrawn_one_is_uncounted() -> None:
    conn = opened()
    first, second = conn.append(PCM_100MS), conn.append(PCM_100MS)
    assert [sent(first)["audio_end_ms"], sent(second)["audio_end_ms"]] == [100, 200]
    conn.withdraw(first)  # a later append was counted on top of it: kept
    assert conn.input.audio_end_ms == 200
    conn.withdraw(second)
    assert conn.input.audio_end_ms == 100
    with pytest.raises(ValueError, match="needs audio"):
        conn.append()
    assert conn.input.samples == 1600


def test_a_g711_session_compands_through_the_encoder_it_is_given() -> None:
    config = SessionConfig(input_audio_format="g711_ulaw", input_sample_rate_hz=8000)
    bare = opened(config=config)
    with pytest.raises(ValueError, match="needs a G\\.711 encoder"):
        bare.append(PCM_100MS)
    assert bare.input.samples == 0
    calls: list[tuple[int, str, int]] = []

    def encode(pcm: bytes, audio_format: str, rate: int) -> bytes:
        calls.append((len(pcm), audio_format, rate))
        return b"\xff" * (len(pcm) // 2)

    conn = opened(config=config, encode_audio=encode)
    append = sent(conn.append(PCM_100MS))
    assert calls == [(len(PCM_100MS), "g711_ulaw", 8000)]
    assert b64decode(append["audio"]) == b"\xff" * 1600 and append["audio_end_ms"] == 200


def test_responses_are_made_by_the_factory_it_is_given() -> None:
    class Tagged(ResponseState):
        pass

    conn = ClientConnection(model="m", new_response=Tagged)
    conn.start()
    conn.receive_data(created())
    conn.receive_data(frame({"type": "response.created", "response": {"id": "resp_t"}}))
    assert type(conn.tracker.handles["resp_t"]) is Tagged
