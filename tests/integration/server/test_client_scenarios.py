"""The conformance scenarios again, through `DuplexClient` against the reference server."""

from __future__ import annotations

import asyncio
import math
import struct

import pytest

from duplex_client import DuplexClient, DuplexConnectionError, DuplexProtocolError, SessionConfig
from duplex_client.client.responses import ResponseHandle
from duplex_client.protocol import ErrorCode, UnitKind
from duplex_client.server import Limits, ReferenceServer
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import JPEG

TIMEOUT = 10.0


def tone(ms: int) -> bytes:
    n = 16 * ms
    return b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / 16000))) for i in range(n)
    )


def jpeg(n: int) -> bytes:
    return JPEG + bytes([n]) * 8


async def next_handles(client: DuplexClient, count: int) -> list[ResponseHandle]:
    """The next `count` decided handles (listens and speaks)."""
    out: list[ResponseHandle] = []
    async with asyncio.timeout(TIMEOUT):
        async for handle in client.responses():
            out.append(handle)
            if len(out) == count:
                return out
    raise AssertionError("the session ended early")


async def next_speech(client: DuplexClient) -> ResponseHandle:
    """The next handle that speaks, finished."""
    async with asyncio.timeout(TIMEOUT):
        async for handle in client.responses():
            if handle.decision == "speak":
                return await handle.wait(TIMEOUT)
    raise AssertionError("no speech")


async def test_handshake_and_capabilities(make_server: MakeServer) -> None:
    for overrides, kinds in (
        ({}, {UnitKind.AUDIO, UnitKind.VISION, UnitKind.OMNI}),
        ({"require_audio": True}, {UnitKind.AUDIO, UnitKind.OMNI}),
        ({"profile": "aura"}, {UnitKind.VISION, UnitKind.OMNI}),
    ):
        server = await make_server(**overrides)
        async with DuplexClient(server.url, model="m") as client:
            assert client.session_id == server.session_ids()[0]
            assert client.capabilities.input_unit_kinds == kinds
            assert client.capabilities.supports_playback_ack


async def test_vision_then_audio_through_the_client(server: ReferenceServer) -> None:
    async with DuplexClient(server.url, model="m") as client:
        sent = [
            await client.append_input(video_frames=[jpeg(0)]),
            await client.append_input(video_frames=[jpeg(1)]),
        ]
        for i in range(5):
            frames = [jpeg(2)] if i == 4 else []
            sent.append(await client.append_input(tone(200), video_frames=frames))
        handles = await next_handles(client, 3)
        assert [h.decision for h in handles] == ["listen"] * 3
        metas = [
            (h.metadata["unit_index"], h.metadata["unit_kind"], h.metadata["audio_unit_index"])
            for h in handles
        ]
        assert metas == [(0, "VISION", None), (1, "VISION", None), (2, "OMNI", 0)]
        rows = server.appends()
        assert [r["event_id"] for r in rows] == sent
        assert [r["audio_end_ms"] for r in rows] == [0, 0, 200, 400, 600, 800, 1000]


@pytest.mark.parametrize("residual_ms", [0, 400])
async def test_manual_commit_drains_queued_frames(
    server: ReferenceServer, residual_ms: int
) -> None:
    config = SessionConfig(extra_body={"auto_response": False})
    async with DuplexClient(server.url, model="m", config=config) as client:
        await client.append_input(video_frames=[jpeg(0)])
        await client.append_input(video_frames=[jpeg(1)])
        if residual_ms:
            await client.append_input(tone(residual_ms))
        committed = await client.wait_committed(await client.commit(), TIMEOUT)
        assert committed.audio_end_ms == residual_ms and not committed.no_response
        await client.create_response()
        handle = await next_speech(client)
        expected = [0, 1, 2] if residual_ms else [0, 1]
        assert handle.metadata["turn_unit_indices"] == expected
        assert "saw 2 images" in handle.transcript
        assert handle.audio_ms > 0 and handle.status == "completed"


async def test_ack_before_commit_keeps_history_and_late_acks_are_refused(
    server: ReferenceServer,
) -> None:
    config = SessionConfig(playback_commit_policy="ack_only")
    async with DuplexClient(server.url, model="m", config=config) as client:
        await client.append_input(tone(600))
        await client.commit()
        first = await next_speech(client)
        await client.append_input(tone(600))
        await client.wait_committed(await client.commit(), TIMEOUT)  # acks `first` before
        await next_speech(client)
        history = server.history()
        assistant = [h for h in history if h["role"] == "assistant"]
        assert assistant and assistant[0]["id"] == f"item_{first.response_id}"
        assert assistant[0]["audio_ms"] == first.audio_ms
        events = client.events()
        assert first.response_id is not None
        await client.ack_playback(100, response_id=first.response_id)
        async with asyncio.timeout(TIMEOUT):
            async for event in events:
                if event.type == "error":
                    assert event.code == ErrorCode.PLAYBACK_ACK_TOO_LATE
                    break


async def test_errors_reach_the_caller(server: ReferenceServer) -> None:
    async with DuplexClient(server.url, model="m") as client:
        with pytest.raises(DuplexProtocolError) as info:
            await client.wait_committed(await client.commit(), TIMEOUT)
        assert info.value.code == ErrorCode.INPUT_AUDIO_BUFFER_EMPTY
        await client.append_input(tone(300))  # the session continues
        committed = await client.wait_committed(await client.commit(), TIMEOUT)
        assert committed.audio_end_ms == 300


async def test_handshake_errors_through_the_client(make_server: MakeServer) -> None:
    server = await make_server(limits=Limits(max_sessions=1), api_key="k")
    with pytest.raises(DuplexConnectionError):
        async with DuplexClient(server.url, model="m", api_key="wrong"):
            pass
    async with DuplexClient(server.url, model="m", api_key="k"):
        with pytest.raises(DuplexProtocolError) as info:
            async with DuplexClient(server.url, model="m", api_key="k"):
                pass
        assert info.value.code == ErrorCode.RESOURCE_EXHAUSTED
    bad = SessionConfig(turn_detection={"type": "server_vad", "interrupt_response": True})
    with pytest.raises(DuplexProtocolError) as info:
        async with DuplexClient(server.url, model="m", api_key="k", config=bad):
            pass
    assert info.value.code == ErrorCode.SERVER_VAD_UNAVAILABLE


async def test_beta_names_and_event_acks(make_server: MakeServer) -> None:
    server = await make_server(event_names="beta")
    async with DuplexClient(server.url, model="m") as client:
        await client.append_input(tone(600))
        await client.commit()
        handle = await next_speech(client)
        assert handle.transcript.startswith("I heard 600 ms")
        journal = server.session().journal
        assert journal is not None
        async with asyncio.timeout(TIMEOUT):  # the client acknowledges what it processed
            while len(journal):
                await asyncio.sleep(0.02)
        assert client.last_server_event_seq == journal.last_seq
