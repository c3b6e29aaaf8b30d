"""Raw JSON: `overlap.decision`, the overlap tuning fields, and `server_vad` on minicpmo."""

from __future__ import annotations

from typing import Any

import pytest

from duplex_client.protocol import ErrorCode
from duplex_client.server import Script
from tests.integration.server.conftest import MakeServer
from tests.integration.server.speech import SERVER_VAD, needs_speech, of_type, send_pcm, spoken
from tests.integration.server.wire import Wire, append, silence, tone

_ENVELOPE = ("event_id", "server_event_seq")


def _bare(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k not in _ENVELOPE}


def _decision(sid: str, policy: str, action: str, reason: str, **details: Any) -> dict[str, Any]:
    head = {"session_id": sid, "epoch": 0, "policy": policy, "action": action, "reason": reason}
    meta = {"type": "overlap.decision", **head, **details}
    return {"type": "overlap.decision", **head, "metadata": meta}


async def _slow(
    make_server: MakeServer,
    text: str = "a b c d e f g h i j",
    interval_ms: int = 400,
    **config: Any,
):
    script = Script.from_dict(
        {
            "chunk_ms": 200,
            "chunk_interval_ms": interval_ms,
            "defaults": {"commit": {"do": "speak", "text": text}},
        }
    )
    return await make_server(script=script, **config)


async def _answering(wire: Wire, **session: Any) -> str:
    """Open, commit one loud turn, wait for its first delta; the session id."""
    created, _ = await wire.open(**session)
    await wire.send(append(tone(400), event_id="evt_a"))
    commit = {"type": "input_audio_buffer.commit", "event_id": "evt_c", "response_create": True}
    await wire.send(commit)
    await wire.until(lambda e: e["type"] in ("response.output_audio.delta", "response.audio.delta"))
    return str(created["session"]["id"])


@pytest.mark.parametrize("names", ["ga", "beta"])
async def test_auto_lane_barge_in_on_speech_reports_each_overlap(
    make_server: MakeServer, names: str
) -> None:
    server = await _slow(make_server, event_names=names)
    wire = await Wire.connect(server.url)
    sid = await _answering(wire, overlap_policy="barge_in_on_speech")
    await wire.send(append(silence(200), event_id="evt_quiet"))
    listen = (await wire.until("overlap.decision"))[-1]
    assert _bare(listen) == _decision(
        sid,
        "barge_in_on_speech",
        "listen",
        "auto_response_continuous",
        duration_ms=200,
        overlap_speech_ms=0,
        buffer_audio=True,
        defer_runtime_append=False,
        force_listen=False,
        preserve_realtime_input=True,
    )
    await wire.send(append(tone(200), event_id="evt_loud"))
    events = await wire.until("response.done")
    types = [e["type"] for e in events]
    barge = events[types.index("overlap.decision")]
    assert _bare(barge) == _decision(
        sid,
        "barge_in_on_speech",
        "barge_in",
        "barge_in_on_speech",
        duration_ms=200,
        overlap_speech_ms=200,
        cancel_reason="barge_in",
        buffer_audio=True,
    )
    assert types.index("overlap.decision") < types.index("output_audio_buffer.cleared")
    assert events[-1]["response"]["status_details"]["reason"] == "barge_in"
    await wire.send(append(tone(200), event_id="evt_after"))  # no response now: no decision
    await wire.send({"type": "session.heartbeat"})
    later = await wire.until("session.heartbeat_ack")
    assert not of_type(later, "overlap.decision")
    await wire.close()


async def test_auto_lane_listen_only_sends_no_decision(make_server: MakeServer) -> None:
    server = await _slow(make_server, "a b c", interval_ms=100)
    wire = await Wire.connect(server.url)
    await _answering(wire, overlap_policy="listen_only")
    await wire.send(append(tone(200), event_id="evt_loud"))
    events = await wire.until("response.done", timeout=20)
    assert events[-1]["response"]["status"] == "completed"
    assert not of_type(events, "overlap.decision")
    await wire.close()


async def test_manual_lane_drops_silence_and_listens_to_speech(make_server: MakeServer) -> None:
    server = await _slow(make_server)
    wire = await Wire.connect(server.url)
    sid = await _answering(wire, extra_body={"auto_response": False}, overlap_short_ack_ms=300)
    for i in range(2):
        await wire.send(append(tone(200), event_id=f"evt_s{i}"))
    await wire.send(append(silence(200), event_id="evt_q"))
    events = await wire.until(lambda e: e.get("reason") == "silence_or_noise")
    decisions = [_bare(e) for e in of_type(events, "overlap.decision")]
    listen = {"buffer_audio": True, "defer_runtime_append": True}
    assert decisions == [
        _decision(sid, "listen_only", "listen", "policy_listen_only", duration_ms=200,
                  overlap_speech_ms=200, **listen),
        _decision(sid, "listen_only", "listen", "policy_listen_only", duration_ms=200,
                  overlap_speech_ms=400, **listen),
        _decision(sid, "listen_only", "drop", "silence_or_noise", duration_ms=200,
                  overlap_speech_ms=400, buffer_audio=False),
    ]  # fmt: skip
    await wire.close()


async def test_declared_speech_and_the_silence_floor_decide_speech(
    make_server: MakeServer,
) -> None:
    server = await _slow(make_server)
    wire = await Wire.connect(server.url)
    await _answering(wire, extra_body={"auto_response": False}, overlap_silence_rms=0.5)
    await wire.send(append(tone(200), event_id="evt_t"))  # RMS ~0.17: below the 0.5 floor
    await wire.send(append(silence(200), event_id="evt_z", is_speech=True))  # declared speech
    events = await wire.until(lambda e: e.get("type") == "overlap.decision" and len(
        of_type(wire.received, "overlap.decision")) == 2)  # fmt: skip
    assert [e["action"] for e in of_type(events, "overlap.decision")] == ["drop", "listen"]
    await wire.close()


async def test_overlap_fields_are_echoed_validated_and_updated(server) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    session = created["session"]
    assert (
        session["overlap_short_ack_ms"],
        session["overlap_barge_in_ms"],
        session["overlap_silence_rms"],
    ) == (700, 1200, 0.003)
    update = {"overlap_short_ack_ms": 250, "overlap_barge_in_ms": 900, "overlap_silence_rms": 0.02}
    await wire.send({"type": "session.update", "event_id": "evt_u", "session": update})
    updated = (await wire.until("session.updated"))[-1]["session"]
    assert {k: updated[k] for k in update} == update
    for bad in ({"overlap_silence_rms": -0.1}, {"overlap_barge_in_ms": "long"}):
        await wire.send({"type": "session.update", "event_id": "evt_bad", "session": bad})
        err = await wire.error(ErrorCode.BAD_EVENT)
        assert err["error"]["param"] == next(iter(bad)) and err["error"]["event_id"] == "evt_bad"
    await wire.close()


async def test_minicpmo_server_vad_needs_a_vad(server) -> None:
    wire = await Wire.connect(server.url)  # the scripted engine has none
    await wire.send(
        {
            "type": "session.update",
            "event_id": "evt_open",
            "session": {"turn_detection": SERVER_VAD},
        }
    )
    err = await wire.error(ErrorCode.SERVER_VAD_UNAVAILABLE)
    # a refusal of the opening session.update is a handshake error, nested as upstream's
    assert err["error"]["param"] == "turn_detection" and "server_event_seq" not in err
    await wire.close()


@needs_speech
@pytest.mark.parametrize("names", ["ga", "beta"])
async def test_minicpmo_server_vad_hears_the_user_and_barges_in(
    make_server: MakeServer, names: str
) -> None:
    server = await make_server(
        profile="minicpmo", engine="speech", speech_chunk_interval_ms=1000, event_names=names
    )
    wire = await Wire.connect(server.url)
    # `server_vad` makes the policy `barge_in_on_speech` (vLLM-Omni 0.30.0 derives it)
    created, _ = await wire.open(turn_detection=SERVER_VAD)
    session = created["session"]
    assert session["turn_detection"]["type"] == "server_vad"
    assert session["capabilities"]["supports_barge_in"] is True
    sid = session["id"]
    await send_pcm(wire, spoken("hello"), "one")
    events = await wire.until(lambda e: e["type"] in ("response.output_audio.delta",
                                                      "response.audio.delta"))  # fmt: skip
    kinds = [e["type"] for e in events]
    assert kinds.index("input_audio_buffer.speech_started") < kinds.index(
        "input_audio_buffer.speech_stopped"
    )
    assert "input_audio_buffer.committed" not in kinds  # the model owns the turns
    rid = events[-1]["response_id"]
    await send_pcm(wire, spoken("what color do you see"), "two")
    events = await wire.until(lambda e: e["type"] == "response.done" and e["response_id"] == rid)
    kinds = [e["type"] for e in events]
    started = kinds.index("input_audio_buffer.speech_started")
    barge = [e for e in of_type(events, "overlap.decision") if e["action"] == "barge_in"]
    assert len(barge) == 1
    assert _bare(barge[0]) == _decision(
        sid,
        "barge_in_on_speech",  # server VAD implies barge-in on speech
        "barge_in",
        "server_vad_speech_started",
        duration_ms=200,
        overlap_speech_ms=barge[0]["metadata"]["overlap_speech_ms"],
        cancel_reason="turn_detected",
        buffer_audio=True,
    )
    assert started < events.index(barge[0]) < kinds.index("output_audio_buffer.cleared")
    assert events[-1]["response"]["status"] == "cancelled"
    assert events[-1]["response"]["status_details"]["reason"] == "turn_detected"
    assert "input_audio_buffer.committed" not in kinds
    await wire.close()


@pytest.mark.parametrize(
    ("hint", "reason"),
    [({"overlap_action": "interrupt"}, "client_overlap_action"),
     ({"force_barge_in": True}, "client_force_barge_in")],
)  # fmt: skip
async def test_a_client_hint_barges_in_under_listen_only(
    make_server: MakeServer, hint: dict[str, Any], reason: str
) -> None:
    server = await _slow(make_server)
    wire = await Wire.connect(server.url)
    await _answering(wire, overlap_policy="listen_only")
    await wire.send(append(silence(200), event_id="evt_h", **hint))
    events = await wire.until("response.done")
    (decision,) = of_type(events, "overlap.decision")
    assert (decision["action"], decision["reason"]) == ("barge_in", reason)
    assert decision["metadata"]["cancel_reason"] == "barge_in"
    assert events[-1]["response"]["status_details"]["reason"] == "barge_in"
    await wire.close()


async def test_an_ill_typed_hint_is_refused(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(200), event_id="evt_h", force_barge_in="yes"))
    err = await wire.error(ErrorCode.BAD_EVENT)
    assert (err["error"]["param"], err["error"]["event_id"]) == ("force_barge_in", "evt_h")
    await wire.close()
