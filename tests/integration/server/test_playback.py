"""Conformance: playback acks, ack_only history, ack-too-late, clears, barge-in, beta names."""

from __future__ import annotations

from typing import Any

from duplex_client.protocol import ErrorCode
from duplex_client.server import Script
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import Wire, append, silence, tone


async def _turn(wire: Wire, n: int) -> list[dict[str, Any]]:
    await wire.send(append(tone(500), event_id=f"evt_a{n}"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": f"evt_c{n}"})
    return await wire.until("response.done")


async def test_ack_only_keeps_only_acknowledged_audio(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open(playback_commit_policy="ack_only")
    events = await _turn(wire, 0)
    done = events[-1]
    rid = done["response_id"]
    total = done["response"]["metadata"]["audio_duration_ms"]
    assert total > 1000
    assert [h["role"] for h in server.history()] == ["user"]  # nothing acknowledged yet
    await wire.send(
        {
            "type": "playback.ack",
            "event_id": "evt_p",
            "response_id": rid,
            "item_id": f"item_{rid}",
            "played_ms": 1000,
            "committed_ms": 1000,
        }
    )
    ack = (await wire.until("playback.acknowledged"))[-1]
    assert ack["client_event_id"] == "evt_p" and ack["response_id"] == rid
    assert ack["played_ms"] == 1000 and ack["committed_ms"] == 1000 and ack["truncate"] is False
    assert (
        ack["event"]["type"] == "playback.acknowledged"
        and ack["event"]["history_committed"] is True
    )
    history = server.history()
    assert [h["role"] for h in history] == ["user", "assistant"]
    assert history[1]["audio_ms"] == 1000 and history[1]["truncated"] is True
    # values beyond the generated audio are clamped; a truncating ack cuts the item
    await wire.send(
        {
            "type": "playback.ack",
            "event_id": "evt_p2",
            "response_id": rid,
            "played_ms": total + 5000,
            "committed_ms": 500,
            "truncate": True,
        }
    )
    ack2 = (await wire.until("playback.acknowledged"))[-1]
    assert ack2["played_ms"] == total and ack2["committed_ms"] == 500 and ack2["truncate"] is True
    assert server.history()[1]["audio_ms"] == 500
    await wire.close()


async def test_ack_too_late_after_a_later_commit(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open(playback_commit_policy="ack_only")
    rid = (await _turn(wire, 0))[-1]["response_id"]
    await _turn(wire, 1)  # a later commit is processed before the ack
    await wire.send(
        {"type": "playback.ack", "event_id": "evt_late", "response_id": rid, "played_ms": 300}
    )
    err = await wire.error(ErrorCode.PLAYBACK_ACK_TOO_LATE)
    assert err["error"]["event_id"] == "evt_late"
    assert [h["role"] for h in server.history()] == ["user", "user"]
    await wire.close()


async def test_ack_before_commit_is_accepted_and_zero_ack_for_listen(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open(playback_commit_policy="ack_only")
    rid = (await _turn(wire, 0))[-1]["response_id"]
    await wire.send(
        {"type": "playback.ack", "event_id": "evt_p", "response_id": rid, "played_ms": 800}
    )
    await wire.until("playback.acknowledged")
    await _turn(wire, 1)
    assert [h["role"] for h in server.history()][:2] == ["user", "assistant"]
    await wire.close()


async def test_commit_all_on_done_history_is_whole(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open(playback_commit_policy="commit_all_on_done")
    done = (await _turn(wire, 0))[-1]
    history = server.history()
    assert history[1]["audio_ms"] == done["response"]["metadata"]["audio_duration_ms"]
    await _turn(wire, 1)
    # acks are informational: never too late under commit_all_on_done
    await wire.send(
        {
            "type": "playback.ack",
            "event_id": "evt_p",
            "response_id": done["response_id"],
            "played_ms": 10,
        }
    )
    await wire.until("playback.acknowledged")
    await wire.close()


async def _slow_server(make_server: MakeServer, interval_ms: int = 500, words: int = 10):
    text = " ".join("abcdefghij"[:words])
    script = Script.from_dict(
        {
            "chunk_ms": 200,
            "chunk_interval_ms": interval_ms,
            "defaults": {"commit": {"do": "speak", "text": text}},
        }
    )
    return await make_server(script=script)


async def test_output_audio_buffer_clear_interrupts_in_order(make_server: MakeServer) -> None:
    server = await _slow_server(make_server)
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(400), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    created = await wire.until("response.output_audio.delta")
    rid = created[-1]["response_id"]
    await wire.send({"type": "output_audio_buffer.clear", "event_id": "evt_clr"})
    events = await wire.until("response.done")
    types = [e["type"] for e in events]
    assert types.index("output_audio_buffer.cleared") < types.index("response.done")
    assert events[types.index("output_audio_buffer.cleared")]["response_id"] == rid
    assert events[-1]["response"]["status"] == "cancelled"
    # vLLM-Omni 0.30.0 (`session/runner.py` `_on_cancel`) names the clear, not a client cancel
    assert events[-1]["response"]["status_details"] == {
        "type": "cancelled",
        "reason": "output_audio_buffer_clear",
    }
    # no more deltas for it
    await wire.send({"type": "session.heartbeat"})
    later = await wire.until("session.heartbeat_ack")
    assert not any(e.get("response_id") == rid for e in later)
    await wire.close()


async def test_barge_in_on_speech(make_server: MakeServer) -> None:
    server = await _slow_server(make_server)
    wire = await Wire.connect(server.url)
    await wire.open(overlap_policy="barge_in_on_speech")
    await wire.send(append(tone(400), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    rid = (await wire.until("response.output_audio.delta"))[-1]["response_id"]
    await wire.send(append(silence(200), event_id="evt_quiet"))  # not speech: no interruption
    await wire.send(append(tone(200), event_id="evt_loud"))
    events = await wire.until("response.done")
    types = [e["type"] for e in events]
    assert types.index("input_audio_buffer.speech_started") < types.index(
        "output_audio_buffer.cleared"
    )
    assert events[-1]["response_id"] == rid
    assert events[-1]["response"]["status_details"]["reason"] == "barge_in"
    assert events[-1]["response"]["metadata"]["epoch"] == 0
    await wire.close()


async def test_listen_only_does_not_interrupt(make_server: MakeServer) -> None:
    server = await _slow_server(make_server, interval_ms=100, words=3)
    wire = await Wire.connect(server.url)
    await wire.open(overlap_policy="listen_only")
    await wire.send(append(tone(400), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    await wire.until("response.output_audio.delta")
    await wire.send(append(tone(200), event_id="evt_loud"))
    events = await wire.until("response.done", timeout=20)
    assert events[-1]["response"]["status"] == "completed"
    assert not any(e["type"] == "input_audio_buffer.speech_started" for e in events)
    await wire.close()


async def test_beta_event_names(make_server: MakeServer) -> None:
    server = await make_server(event_names="beta")
    wire = await Wire.connect(server.url)
    await wire.open()
    events = await _turn(wire, 0)
    types = {e["type"] for e in events}
    assert {
        "response.audio.delta",
        "response.audio_transcript.delta",
        "response.audio.done",
        "conversation.item.created",
    } <= types
    assert not types & {"response.output_audio.delta", "conversation.item.added"}
    await wire.close()


async def test_response_order_and_cardinality(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    events = [e for e in await _turn(wire, 0) if e.get("response_id")]
    rid = events[0]["response_id"]
    types = [e["type"] for e in events if e.get("response_id") == rid]
    assert types[0] == "response.created" and types[-1] == "response.done"
    assert types.count("response.speak") == 1
    assert types.index("response.speak") < types.index("response.output_audio.delta")
    for once in ("response.output_audio.done", "response.output_audio_transcript.done"):
        assert types.count(once) == 1
    deltas = [e for e in events if e["type"] == "response.output_audio.delta"]
    assert all(d["format"] == "pcm16" and d["sample_rate_hz"] == 24000 for d in deltas)
    durations = [d["metadata"]["audio_duration_ms"] for d in deltas]
    assert durations == sorted(durations) and durations[0] == 1000  # ~1 s per delta
    assert deltas[-1]["metadata"]["end_of_turn"] is True
    transcript = "".join(
        e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta"
    )
    done_t = next(e for e in events if e["type"] == "response.output_audio_transcript.done")[
        "transcript"
    ]
    assert transcript == done_t
    seqs = [e["server_event_seq"] for e in wire.received if "server_event_seq" in e]
    assert seqs == list(range(1, len(seqs) + 1))
    await wire.close()


async def test_response_create_listen_decision_and_text_modality(make_server: MakeServer) -> None:
    script = Script.from_dict({"rules": [{"on": "response.create", "index": 0, "do": "listen"}]})
    server = await make_server(script=script)
    wire = await Wire.connect(server.url)
    await wire.open(extra_body={"auto_response": False})
    await wire.send(append(tone(300), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    await wire.until("input_audio_buffer.committed")
    await wire.send({"type": "response.create", "event_id": "evt_r0"})
    events = await wire.until("response.done")
    rid = events[-1]["response_id"]
    listen = next(e for e in events if e["type"] == "response.listen")
    assert listen["response_id"] == rid
    # the turn was answered by the listen; a text-only response now answers the open input
    await wire.send(append(tone(300), event_id="evt_b"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c2"})
    await wire.until("input_audio_buffer.committed")
    await wire.send(
        {"type": "response.create", "event_id": "evt_r1", "response": {"modalities": ["text"]}}
    )
    events = await wire.until("response.done")
    types = [e["type"] for e in events]
    assert "response.output_text.delta" in types and "response.output_audio.delta" not in types
    assert "response.output_text.done" in types
    await wire.close()


async def test_conversation_items(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(
        {
            "type": "conversation.item.create",
            "event_id": "evt_i",
            "item": {
                "id": "item_mine",
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "hi"}],
            },
        }
    )
    added = (await wire.until("conversation.item.added"))[-1]
    assert added["item"]["id"] == "item_mine"
    await wire.send(
        {"type": "conversation.item.retrieve", "event_id": "evt_r", "item_id": "item_mine"}
    )
    assert (await wire.until("conversation.item.retrieved"))[-1]["item"]["id"] == "item_mine"
    await wire.send(
        {
            "type": "conversation.item.truncate",
            "event_id": "evt_t",
            "item_id": "item_mine",
            "audio_end_ms": 0,
        }
    )
    await wire.until("conversation.item.truncated")
    await wire.send(
        {"type": "conversation.item.delete", "event_id": "evt_d", "item_id": "item_mine"}
    )
    assert (await wire.until("conversation.item.deleted"))[-1]["item_id"] == "item_mine"
    await wire.send(
        {"type": "conversation.item.retrieve", "event_id": "evt_r2", "item_id": "item_mine"}
    )
    await wire.error(ErrorCode.ITEM_NOT_FOUND)
    await wire.close()
