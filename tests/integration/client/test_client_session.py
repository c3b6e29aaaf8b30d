"""DuplexClient against a scripted peer over a real WebSocket on 127.0.0.1 (port 0)."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from duplex_client import (
    DuplexClient,
    DuplexConnectionError,
    DuplexProtocolError,
    DuplexSessionClosedError,
    SessionConfig,
)
from duplex_client.protocol import ResponseAudioDelta, UnknownEvent, b64decode, b64encode
from tests.support.scripted_server import Peer, ScriptedServer

JPEG = b"\xff\xd8\xff\xe0" + b"0" * 60


async def wait_for(pred: Any, timeout: float = 5.0) -> None:
    async def loop() -> None:
        while not pred():
            await asyncio.sleep(0.005)

    await asyncio.wait_for(loop(), timeout)


async def test_handshake_url_first_message_and_adoption() -> None:
    async with (
        ScriptedServer() as server,
        DuplexClient(
            server.url + "/?autostart=1",
            model="m",
            api_key="sk-test",
            config=SessionConfig(temperature=0.0),
        ) as client,
    ):
        peer = server.peer
        assert peer.path == "/v1/realtime?duplex=1&model=m&autostart=0"
        assert peer.headers["authorization"] == "Bearer sk-test"
        first = peer.received[0]
        assert first["type"] == "session.update" and first["event_id"].startswith("evt_")
        assert first["session"]["model"] == "m" and "session_id" not in first["session"]
        assert first["session"]["temperature"] == 0.0
        assert client.session_id == "duplex-" + "ab" * 16
        assert client.capabilities.first_unit_ms == 1000
        assert client.capabilities.supports_playback_ack
        await wait_for(lambda: client.session.get("state") == "open")


async def test_append_fields_cumulative_audio_and_vision() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        pcm = b"\x01\x00" * 3200  # 200 ms
        id1 = await client.append_input(pcm, is_speech=True, media_start_ms=0, media_end_ms=200)
        id2 = await client.append_input(np.zeros(3200, dtype=np.int16))
        id3 = await client.append_input(
            pcm, video_frames=["data:image/jpeg;base64," + b64encode(JPEG)], unit_index=0
        )
        id4 = await client.append_input(
            video_frames=[JPEG], media_start_ms=600, media_end_ms=1600, unit_index=1
        )
        assert client.audio_end_ms == 600
        await wait_for(lambda: len(server.peer.of_type("input_audio_buffer.append")) == 4)
        a1, a2, a3, a4 = server.peer.of_type("input_audio_buffer.append")
        assert [a["event_id"] for a in (a1, a2, a3, a4)] == [id1, id2, id3, id4]
        assert (a1["duration_ms"], a1["audio_start_ms"], a1["audio_end_ms"]) == (200, 0, 200)
        assert a1["is_speech"] is True and a1["media_end_ms"] == 200
        assert b64decode(a1["audio"]) == pcm and a1["format"] == "pcm16"
        assert a2["audio_end_ms"] == 400 and "is_speech" not in a2
        assert a3["audio_end_ms"] == 600 and a3["video_frames"] == [b64encode(JPEG)]
        assert a3["unit_index"] == 0
        # VISION: frames only, cumulative audio unchanged, declared non-speech
        assert a4["audio"] == "" and a4["duration_ms"] == 0 and a4["audio_end_ms"] == 600
        assert a4["video_frames"] == [b64encode(JPEG)] and a4["is_speech"] is False
        assert "format" not in a4 and a4["unit_index"] == 1


async def test_append_rejects_bad_input_locally() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        with pytest.raises(ValueError, match="needs audio"):
            await client.append_input()
        with pytest.raises(ValueError, match="multiple of the sample width"):
            await client.append_input(b"\x00\x00\x00")
        with pytest.raises(ValueError, match="int16"):
            await client.append_input(np.zeros(10, dtype=np.float64))
        with pytest.raises(ValueError, match="max_frames_per_append"):
            await client.append_input(video_frames=[JPEG, JPEG, JPEG])
        assert client.audio_end_ms == 0


async def test_control_events_are_sent_in_call_order() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        await client.append_input(b"\x00\x00" * 160)
        c = await client.commit(create_response=False)
        r = await client.create_response(instructions="short")
        x = await client.cancel_response("resp_x")
        k = await client.clear_input()
        raw = await client.send_raw({"type": "input.cancel", "event_id": "evt_raw"})
        await wait_for(lambda: len(server.peer.received) >= 7)
        types = [m["type"] for m in server.peer.received if m["type"] != "session.event_ack"]
        assert types == [
            "session.update",
            "input_audio_buffer.append",
            "input_audio_buffer.commit",
            "response.create",
            "response.cancel",
            "input_audio_buffer.clear",
            "input.cancel",
        ]
        ids = {m["type"]: m["event_id"] for m in server.peer.received}
        assert (
            ids["input_audio_buffer.commit"],
            ids["response.create"],
            ids["response.cancel"],
            ids["input_audio_buffer.clear"],
            raw,
        ) == (c, r, x, k, "evt_raw")
        commit = server.peer.of_type("input_audio_buffer.commit")[0]
        assert commit["final"] is True and commit["response_create"] is False
        assert server.peer.of_type("response.create")[0]["response"] == {"instructions": "short"}
        assert server.peer.of_type("response.cancel")[0]["response_id"] == "resp_x"


async def speak(peer: Peer, rid: str, *, beta: bool = False, chunks: int = 2) -> None:
    audio = "response.audio.delta" if beta else "response.output_audio.delta"
    tdelta = "response.audio_transcript.delta" if beta else "response.output_audio_transcript.delta"
    await peer.send({"type": "response.created", "response": {"id": rid, "status": "in_progress"}})
    await peer.send({"type": "response.speak", "response_id": rid})
    for i in range(chunks):
        pcm = (np.full(24000, i + 1, dtype=np.int16)).tobytes()
        await peer.send(
            {"type": audio, "response_id": rid, "delta": b64encode(pcm), "sample_rate_hz": 24000}
        )
        await peer.send({"type": tdelta, "response_id": rid, "delta": f"w{i} "})
    await peer.send({"type": "response.done", "response": {"id": rid, "status": "completed"}})


@pytest.mark.parametrize("beta", [False, True])
async def test_responses_yield_speak_and_listen_handles(beta: bool) -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:

        async def on_commit(peer: Peer, event: dict[str, Any]) -> None:
            await peer.send(
                {
                    "type": "input_audio_buffer.committed",
                    "client_event_id": event["event_id"],
                    "audio_end_ms": 200,
                }
            )
            await speak(peer, "resp_1", beta=beta)
            await peer.send(
                {
                    "type": "response.listen",
                    "response": {"status": "listening", "metadata": {"reason": "model_listen"}},
                }
            )

        server.on("input_audio_buffer.commit", on_commit)
        await client.append_input(b"\x00\x00" * 3200)
        committed = await client.wait_committed(await client.commit(), timeout=5)
        assert committed.audio_end_ms == 200
        it = client.responses()
        first = await asyncio.wait_for(anext(it), 5)
        assert first.decision == "speak" and first.response_id == "resp_1"
        chunks = [c async for c in first.audio()]
        await first.wait(5)
        assert len(chunks) == 2 and first.audio_ms == 2000 and first.transcript == "w0 w1 "
        assert first.audio_bytes()[:2] == b"\x01\x00"
        second = await asyncio.wait_for(anext(it), 5)
        assert second.decision == "listen" and second.response_id is None and second.done


async def test_sequenced_events_are_acked_and_duplicates_dropped() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        seen: list[Any] = []
        client.add_listener(lambda e, t: seen.append(e))
        for seq in (5, 6, 6, 3, 7):
            await server.peer.send({"type": "rate_limits.updated", "server_event_seq": seq})
        await wait_for(lambda: client.last_server_event_seq == 7)
        await wait_for(
            lambda: any(
                m.get("server_event_seq") == 7 for m in server.peer.of_type("session.event_ack")
            )
        )
        assert [e.server_event_seq for e in seen if e.type == "rate_limits.updated"] == [5, 6, 7]
        acked = [m["server_event_seq"] for m in server.peer.of_type("session.event_ack")]
        assert acked == sorted(acked) and max(acked) == 7


async def test_error_event_raises_with_its_code_for_the_echoed_commit() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:

        async def reject(peer: Peer, event: dict[str, Any]) -> None:
            await peer.send(
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "code": "input_audio_buffer_empty",
                        "message": "nothing to commit",
                        "event_id": event["event_id"],
                    },
                }
            )

        server.on("input_audio_buffer.commit", reject)
        eid = await client.commit()
        with pytest.raises(DuplexProtocolError) as info:
            await client.wait_committed(eid, timeout=5)
        assert info.value.code == "input_audio_buffer_empty" and info.value.event_id == eid
        assert client.is_open and client.errors[-1].code == "input_audio_buffer_empty"


async def test_handshake_error_raises_protocol_error_with_code() -> None:
    err = {"type": "invalid_request_error", "code": "ref_audio_required", "message": "need voice"}
    async with ScriptedServer(handshake_error=err) as server:
        with pytest.raises(DuplexProtocolError) as info:
            async with DuplexClient(server.url, model="m"):
                pass
        assert info.value.code == "ref_audio_required"


async def test_endpoint_without_capabilities_is_rejected() -> None:
    async with ScriptedServer(no_capabilities=True) as server:
        with pytest.raises(DuplexProtocolError, match="not a duplex handler"):
            await DuplexClient(server.url, model="m").connect()


async def test_handshake_timeout() -> None:
    async with ScriptedServer(created_delay_s=2.0) as server:
        with pytest.raises(DuplexProtocolError, match=r"no session\.created"):
            await DuplexClient(server.url, model="m", handshake_timeout=0.2).connect()


async def test_refused_connection_is_a_connection_error() -> None:
    async with ScriptedServer() as server:
        url = server.url
    with pytest.raises(DuplexConnectionError, match="cannot connect"):
        await DuplexClient(url, model="m").connect()


async def test_close_sends_session_close_and_waits_for_closed() -> None:
    async with ScriptedServer() as server:
        async with DuplexClient(server.url, model="m") as client:
            pass
        sent = [m["type"] for m in server.peer.received if m["type"] != "session.event_ack"]
        assert sent == ["session.update", "session.close"]
        assert client.closed_reason == "client_close"
        with pytest.raises(DuplexSessionClosedError):
            await client.append_input(b"\x00\x00")


async def test_close_happens_when_body_raises() -> None:
    async with ScriptedServer() as server:
        with pytest.raises(RuntimeError, match="boom"):
            async with DuplexClient(server.url, model="m"):
                raise RuntimeError("boom")
        await wait_for(lambda: bool(server.peer.of_type("session.close")))


async def test_close_gives_up_after_timeout_when_server_is_silent() -> None:
    async with ScriptedServer(answer_close=False) as server:
        client = DuplexClient(server.url, model="m", close_timeout=0.2)
        await client.connect()
        await client.close()
        assert client.closed_reason == "client_close" and not client.is_open


async def test_nothing_is_sent_after_a_terminal_event() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        responses = client.responses()
        await server.peer.send({"type": "session.expired", "reason": "idle_ttl_expired"})
        assert await client.wait_closed(5) == "idle_ttl_expired"
        with pytest.raises(StopAsyncIteration):
            await anext(responses)
        with pytest.raises(DuplexSessionClosedError):
            await client.commit()
        await asyncio.sleep(0.05)
        assert server.peer.of_type("session.event_ack") == []


async def test_slow_consumer_loses_only_its_oldest_events() -> None:
    async with (
        ScriptedServer() as server,
        DuplexClient(server.url, model="m", queue_size=8) as client,
    ):
        slow, fast = client.events(), client.events()
        fast_seen: list[int] = []

        async def drain() -> None:
            async for e in fast:
                if isinstance(e, UnknownEvent):
                    fast_seen.append(e.raw["n"])

        task = asyncio.create_task(drain())
        for n in range(40):
            await server.peer.send({"type": "x.custom", "n": n}, seq=False)
            await asyncio.sleep(0.001)
        await wait_for(lambda: fast_seen[-1:] == [39])
        got = []
        while (item := slow.get_nowait()) is not None:
            got.append(item)
        assert [e.raw["n"] for e in got] == list(range(32, 40)) and slow.dropped >= 32
        assert fast_seen == list(range(40))
        task.cancel()


async def test_unknown_events_pass_through_with_raw() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        sub = client.events()
        await server.peer.send({"type": "vendor.telemetry", "value": [1, 2]})
        event = await asyncio.wait_for(sub.get(), 5)
        while event.type != "vendor.telemetry":
            event = await asyncio.wait_for(sub.get(), 5)
        assert isinstance(event, UnknownEvent) and event.raw["value"] == [1, 2]


async def test_heartbeat_runs_at_configured_interval() -> None:
    async with (
        ScriptedServer() as server,
        DuplexClient(server.url, model="m", heartbeat_interval_s=0.05) as client,
    ):
        await wait_for(lambda: len(server.peer.of_type("session.heartbeat")) >= 3)
        assert client.is_open


async def test_ack_before_commit_for_finished_responses() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        await speak(server.peer, "resp_a", chunks=1)
        handle = await asyncio.wait_for(anext(client.responses()), 5)
        await handle.wait(5)
        await client.commit()
        await wait_for(lambda: bool(server.peer.of_type("input_audio_buffer.commit")))
        types = [m["type"] for m in server.peer.received if m["type"] != "session.event_ack"]
        assert types[-2:] == ["playback.ack", "input_audio_buffer.commit"]
        ack = server.peer.of_type("playback.ack")[0]
        assert ack["response_id"] == "resp_a" and ack["played_ms"] == 1000
        assert ack["item_id"] == "item_resp_a"
        await client.commit()
        await wait_for(lambda: len(server.peer.of_type("input_audio_buffer.commit")) == 2)
        assert len(server.peer.of_type("playback.ack")) == 1  # acked once


async def test_no_playback_ack_when_server_does_not_support_it() -> None:
    caps = {"required_input_modalities": [], "optional_input_modalities": ["audio", "video"]}
    async with (
        ScriptedServer(capabilities=caps) as server,
        DuplexClient(server.url, model="m") as client,
    ):
        assert await client.ack_playback(100, response_id="resp_1") is None
        await speak(server.peer, "resp_a", chunks=1)
        await (await asyncio.wait_for(anext(client.responses()), 5)).wait(5)
        await client.commit()
        await wait_for(lambda: bool(server.peer.of_type("input_audio_buffer.commit")))
        assert server.peer.of_type("playback.ack") == []


async def test_cancel_fences_audio_of_the_active_response() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        peer = server.peer
        await peer.send({"type": "response.created", "response": {"id": "resp_c"}})
        pcm = b64encode(b"\x02\x00" * 2400)
        await peer.send(
            {"type": "response.output_audio.delta", "response_id": "resp_c", "delta": pcm}
        )
        handle = await asyncio.wait_for(anext(client.responses()), 5)
        await client.cancel_response()
        await peer.send(
            {"type": "response.output_audio.delta", "response_id": "resp_c", "delta": pcm}
        )
        await peer.send(
            {"type": "response.done", "response": {"id": "resp_c", "status": "cancelled"}}
        )
        await handle.wait(5)
        assert handle.audio_ms == 100 and handle.fenced and handle.status == "cancelled"
        assert peer.of_type("response.cancel")[0].get("response_id") is None


async def test_server_drop_ends_session_and_iterators() -> None:
    async with ScriptedServer() as server:
        client = DuplexClient(server.url, model="m", reconnect=False)
        await client.connect()
        it = client.responses()
        await server.peer.conn.close(1011)
        assert (await client.wait_closed(5)).startswith("disconnect")
        with pytest.raises(StopAsyncIteration):
            await anext(it)
        with pytest.raises(DuplexSessionClosedError):
            await client.wait_committed("evt_never", timeout=1)
        await client.close()


async def test_binary_and_malformed_frames_are_ignored() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        sub = client.events()
        await server.peer.conn.send(b"\x00\x01binary")
        await server.peer.conn.send("{not json")
        await server.peer.conn.send("[1,2,3]")
        pcm = b64encode(b"\x00\x00" * 10)
        await server.peer.send(
            {"type": "response.output_audio.delta", "response_id": "r", "delta": pcm}
        )
        event = await asyncio.wait_for(sub.get(), 5)
        while not isinstance(event, ResponseAudioDelta):
            event = await asyncio.wait_for(sub.get(), 5)
        assert client.is_open


async def test_response_acked_part_way_is_acked_again_before_commit() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        peer = server.peer
        await peer.send({"type": "response.created", "response": {"id": "resp_p"}})
        one_s = b64encode(np.zeros(24000, dtype=np.int16).tobytes())
        await peer.send(
            {"type": "response.output_audio.delta", "response_id": "resp_p", "delta": one_s}
        )
        handle = await asyncio.wait_for(anext(client.responses()), 5)
        await client.ack_playback(500, response_id="resp_p")
        await peer.send(
            {"type": "response.output_audio.delta", "response_id": "resp_p", "delta": one_s}
        )
        await peer.send(
            {"type": "response.done", "response": {"id": "resp_p", "status": "completed"}}
        )
        await handle.wait(5)
        await client.commit()
        await client.commit()
        await wait_for(lambda: len(peer.of_type("input_audio_buffer.commit")) == 2)
        assert [a["played_ms"] for a in peer.of_type("playback.ack")] == [500, 2000]


async def test_a_finished_response_is_acked_at_done_when_received_counts_as_played() -> None:
    """Under `ack_policy="received"` the ack leaves at response.done, not at the next commit:
    a server that commits by itself (server VAD) would otherwise refuse it as too late."""
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        await speak(server.peer, "resp_d", chunks=1)
        await wait_for(lambda: bool(server.peer.of_type("playback.ack")))
        ack = server.peer.of_type("playback.ack")[0]
        assert (ack["response_id"], ack["played_ms"]) == ("resp_d", 1000)
        assert server.peer.of_type("input_audio_buffer.commit") == []
        assert client.tracker.handles["resp_d"].acked_ms == 1000


@pytest.mark.parametrize(("policy", "acks"), [("ack_only", 0), ("commit_all_on_done", 1)])
async def test_a_response_sealed_by_a_later_commit_is_not_acked_under_ack_only(
    policy: str, acks: int
) -> None:
    """Its done arrived, then the server's own commit: under `ack_only` an ack is refused."""
    config = SessionConfig(playback_commit_policy=policy)
    async with (
        ScriptedServer() as server,
        DuplexClient(server.url, model="m", config=config, ack_policy="manual") as client,
    ):
        await speak(server.peer, "resp_s", chunks=1)
        await server.peer.send(
            {"type": "input_audio_buffer.committed", "client_event_id": None, "audio_end_ms": 0}
        )
        handles = client.tracker.handles
        await wait_for(lambda: "resp_s" in handles and handles["resp_s"].sealed)
        handles["resp_s"].played_ms = 700
        await client.commit()
        await wait_for(lambda: bool(server.peer.of_type("input_audio_buffer.commit")))
        assert len(server.peer.of_type("playback.ack")) == acks
