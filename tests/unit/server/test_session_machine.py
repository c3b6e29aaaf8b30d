"""The sans-I/O session with injected time: timers, pipeline latency, expiry, resume, takeover."""

from __future__ import annotations

from duplex_client.protocol import ErrorCode
from duplex_client.server import Faults, Limits, Script
from duplex_client.server.lifecycle import SessionState
from tests.unit.server.helpers import append, closes, events, open_session, tone, types


def test_handshake_outputs_and_seq() -> None:
    _, session, outputs = open_session()
    evs = events(outputs)
    assert [e["type"] for e in evs] == ["session.created", "session.updated"]
    assert "server_event_seq" not in evs[0] and evs[1]["server_event_seq"] == 1
    assert session.next_deadline() == 60.0  # the journal's retention comes before the idle TTL


def test_unit_latency_delays_decisions_until_tick() -> None:
    _, session, _ = open_session(faults=Faults(unit_latency_ms=500))
    out = session.handle(append(tone(1000)), 1.0)
    assert "response.listen" not in types(out)
    assert session.next_deadline() == 1.5
    assert types(session.tick(1.4)) == []
    listen = events(session.tick(1.5))
    assert listen[0]["type"] == "response.listen"
    assert listen[0]["response"]["metadata"]["unit_index"] == 0


def test_slow_unit_holds_later_units_behind_it() -> None:
    _, session, _ = open_session(faults=Faults(slow_units={0: 1500}))
    session.handle(append(tone(2000)), 0.0)
    assert types(session.tick(1.0)) == []
    out = events(session.tick(1.5))
    assert [e["response"]["metadata"]["unit_index"] for e in out] == [0, 1]


def test_commit_ack_waits_for_its_units() -> None:
    _, session, _ = open_session(faults=Faults(unit_latency_ms=200))
    session.handle(append(tone(1400)), 0.0)
    out = session.handle({"type": "input_audio_buffer.commit", "event_id": "evt_c"}, 0.0)
    assert "input_audio_buffer.committed" not in types(out)
    out = session.tick(0.4)  # unit 0 at 0.2, residual unit 1 at 0.4, then the commit
    t = types(out)
    assert t.index("response.listen") < t.index("input_audio_buffer.committed")


def test_paced_output_chunks() -> None:
    script = Script.from_dict({"chunk_ms": 200, "chunk_interval_ms": 200})
    _, session, _ = open_session(script=script)
    session.handle(append(tone(500)), 0.0)
    out = session.handle({"type": "input_audio_buffer.commit", "event_id": "evt_c"}, 0.0)
    assert types(out).count("response.output_audio.delta") == 1
    assert session.next_deadline() == 0.2
    assert types(session.tick(0.2)).count("response.output_audio.delta") == 1
    assert session.conversation.active is not None


def test_an_idle_read_timeout_detaches_into_the_grace() -> None:
    """vLLM-Omni 0.30.0's read loop: no client event for `idle_timeout_s` is a disconnect."""
    _, session, _ = open_session(
        session={"idle_timeout_s": 5}, limits=Limits(disconnect_grace_s=10)
    )
    session.handle({"type": "session.heartbeat"}, 3.0)
    assert session.next_deadline() == 8.0
    out = session.tick(8.0)
    assert events(out) == [] and closes(out)[0].code == 1000  # the socket closes, quietly
    assert session.state is SessionState.DETACHED and not session.closed
    out = session.tick(18.0)  # the grace ran out
    assert events(out)[-1] == events(out)[-1] | {
        "type": "session.expired",
        "reason": "disconnect_grace_expired",
    }
    assert session.closed


def test_an_idle_read_timeout_ends_a_session_that_cannot_resume() -> None:
    _, session, _ = open_session(session={"idle_timeout_s": 5}, resumable=False)
    out = session.tick(5.0)
    assert events(out)[-1] == events(out)[-1] | {"type": "session.closed", "reason": "disconnect"}
    assert session.closed


def test_disconnect_grace_then_expiry() -> None:
    registry, session, _ = open_session(limits=Limits(disconnect_grace_s=10))
    assert session.detach(1.0) == []
    assert session.next_deadline() == 11.0
    out = session.tick(11.0)
    assert events(out)[-1]["reason"] == "disconnect_grace_expired"
    assert closes(out) == []  # no socket to close
    assert registry.sessions == {}


def test_resume_rotates_the_token_and_replays() -> None:
    registry, session, handshake = open_session()
    token = events(handshake)[0]["resume_token"]
    session.handle(append(tone(1000)), 0.0)
    session.detach(1.0)
    assert session.state is SessionState.DETACHED and session.next_deadline() is not None
    result = registry.resume(
        {
            "type": "session.resume",
            "session_id": session.session_id,
            "resume_token": token,
            "last_received_server_event_seq": 1,
        },
        2.0,
    )
    resumed, *replay = events(result.outputs)
    assert resumed["type"] == "session.resumed" and resumed["resume_token"] != token
    assert [e["server_event_seq"] for e in replay] == [2]
    assert result.replaced_generation == 1 and session.state is SessionState.OPEN
    again = registry.resume(
        {"type": "session.resume", "session_id": session.session_id, "resume_token": token}, 3.0
    )
    refused = events(again.outputs)[0]["error"]  # nested, as vLLM-Omni 0.30.0's handshake
    assert refused["code"] == ErrorCode.SESSION_RESUME_CONFLICT


def test_replaced_outputs() -> None:
    _, session, _ = open_session()
    out = session.replaced_outputs(1)
    assert events(out)[0] | {"event_id": None} == {
        "type": "session.replaced",
        "event_id": None,
        "session_id": session.session_id,
        "attachment_generation": 1,
    }
    assert closes(out)[0].code == 1000


def test_close_cancels_the_active_response() -> None:
    script = Script.from_dict({"chunk_interval_ms": 1000})
    _, session, _ = open_session(script=script)
    session.handle(append(tone(500)), 0.0)
    session.handle({"type": "input_audio_buffer.commit", "event_id": "evt_c"}, 0.0)
    out = session.handle({"type": "session.close"}, 0.1)
    evs = events(out)
    done = next(e for e in evs if e["type"] == "response.done")
    assert done["response"]["status"] == "cancelled"
    assert evs[-1]["type"] == "session.closed" and evs[-1]["reason"] == "client_close"
    assert closes(out)[0].code == 1000
    late = events(session.handle({"type": "input_audio_buffer.commit", "event_id": "x"}, 0.2))
    assert late[0]["error"]["code"] == ErrorCode.SESSION_CLOSED


def test_scripted_fatal_failure_ends_the_session() -> None:
    script = Script.from_dict({"rules": [{"on": "commit", "do": "fail", "code": "engine_error"}]})
    _, session, _ = open_session(script=script)
    session.handle(append(tone(500)), 0.0)
    out = session.handle({"type": "input_audio_buffer.commit", "event_id": "evt_c"}, 0.0)
    evs = events(out)
    assert evs[0]["error"] | {"message": ""} == {
        "type": "server_error",
        "code": "engine_error",
        "message": "",
        "event_id": "evt_c",
    }
    assert evs[-1]["type"] == "session.closed" and evs[-1]["reason"] == "error"
    assert closes(out)[0].code == 1011


def test_script_delay_defers_the_answer() -> None:
    script = Script.from_dict(
        {"rules": [{"on": "commit", "do": "speak", "text": "hi", "delay_ms": 700}]}
    )
    _, session, _ = open_session(script=script)
    session.handle(append(tone(500)), 0.0)
    out = session.handle({"type": "input_audio_buffer.commit", "event_id": "evt_c"}, 0.0)
    assert "input_audio_buffer.committed" not in types(out)
    assert "response.done" in types(session.tick(0.7))


def test_deferred_commit_is_answered_after_the_active_response() -> None:
    script = Script.from_dict({"chunk_interval_ms": 1000, "chunk_ms": 200})
    _, session, _ = open_session(script=script)
    session.handle(append(tone(500), "evt_a1"), 0.0)
    session.handle({"type": "input_audio_buffer.commit", "event_id": "evt_c1"}, 0.0)
    session.handle(append(tone(500), "evt_a2"), 0.1)
    out = events(session.handle({"type": "input_audio_buffer.commit", "event_id": "evt_c2"}, 0.1))
    ack = next(e for e in out if e["type"] == "input_audio_buffer.committed")
    assert ack["event"]["response_create_deferred"] is True
    later: list[str] = []
    t = 0.1
    while "response.created" not in later:
        t += 1.0
        later = types(session.tick(t))
    assert later.index("response.done") < later.index("response.created")


def test_deferred_commit_keeps_the_engines_decision() -> None:
    rules = [
        {"on": "commit", "index": 0, "do": "speak", "text": "first", "audio_ms": 400},
        {"on": "commit", "index": 1, "do": "speak", "text": "second answer", "audio_ms": 600},
    ]
    script = Script.from_dict({"chunk_interval_ms": 1000, "chunk_ms": 200, "rules": rules})
    _, session, _ = open_session(script=script)
    session.handle(append(tone(500), "evt_a1"), 0.0)
    session.handle({"type": "input_audio_buffer.commit", "event_id": "evt_c1"}, 0.0)
    session.handle(append(tone(500), "evt_a2"), 0.1)
    session.handle({"type": "input_audio_buffer.commit", "event_id": "evt_c2"}, 0.1)
    later: list[dict] = []
    t = 0.1
    while sum(e["type"] == "response.done" for e in later) < 2 and t < 30:
        t += 1.0
        later += events(session.tick(t))
    created = [i for i, e in enumerate(later) if e["type"] == "response.created"]
    deferred = later[created[-1] :]
    assert deferred[0]["response"]["metadata"]["trigger"] == "deferred_commit"
    text = "".join(e["delta"] for e in deferred if e["type"].endswith("transcript.delta"))
    audio = [e for e in deferred if e["type"] == "response.output_audio.delta"]
    assert text.strip() == "second answer"  # the script's words, not a composed default
    assert len(audio) == 3  # its 600 ms, in 200 ms chunks


def test_internal_errors_are_contained(monkeypatch) -> None:
    _, session, _ = open_session()

    def boom(*args: object) -> None:
        raise RuntimeError("bug")

    monkeypatch.setitem(
        __import__("duplex_client.server.handlers", fromlist=["HANDLERS"]).HANDLERS,
        "session.heartbeat",
        boom,
    )
    out = session.handle({"type": "session.heartbeat"}, 0.0)
    evs = events(out)
    assert evs[0]["error"]["code"] == ErrorCode.INTERNAL_ERROR
    assert evs[-1]["type"] == "session.closed" and closes(out)[0].code == 1011


def test_append_rows_are_bounded_but_counted(monkeypatch) -> None:
    monkeypatch.setattr("duplex_client.server.session.machine.MAX_APPEND_ROWS", 3)
    _, session, _ = open_session()
    for i in range(5):
        session.handle(append(tone(200), f"evt_a{i}"), i * 0.2)
    assert session.ledger.append_count == 5
    assert [r["index"] for r in session.ledger.appends] == [2, 3, 4]  # latest rows, true indices
    assert [r["event_id"] for r in session.ledger.appends] == ["evt_a2", "evt_a3", "evt_a4"]


def _request_metrics(extra_body: dict[str, object]) -> list[object]:
    script = Script.from_dict(
        {"rules": [{"on": "unit", "index": 0, "do": "speak", "text": "hi", "delay_ms": 300}]}
    )
    _, session, _ = open_session(script=script, session={"extra_body": extra_body})
    session.handle(append(tone(1000)), 1.0)  # closes unit 0: answered at 1.3
    session.handle(append(tone(100), event_id="evt_b"), 1.2)  # the last append before it
    out = events(session.tick(1.3)) + events(session.tick(5.0))
    done = [e for e in out if e["type"] == "response.done"]
    assert len(done) == 1
    return [done[0]["response"]["metadata"].get("response_request_metrics")]


def test_request_metrics_time_from_the_last_append_before_the_response() -> None:
    (block,) = _request_metrics({"return_stage_metrics": True})
    assert isinstance(block, dict) and block["source"] == "server_monotonic_request_start"
    assert (block["ttft_ms"], block["ttfp_ms"]) == (100.0, 100.0)
    assert _request_metrics({}) == [None]  # only when asked for
