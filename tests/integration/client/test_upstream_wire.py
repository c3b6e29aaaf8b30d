"""The SDK against the reference server on upstream's wire (#20): turn signals, flat errors."""

from __future__ import annotations

import asyncio

import pytest

from duplex_client import DuplexClient, DuplexProtocolError
from duplex_client.client.resume import ReconnectPolicy, ResumeFailed, resume_attempts
from duplex_client.client.transport import WebSocketTransport
from duplex_client.protocol import TurnEvent
from duplex_client.protocol import client_events as ce
from duplex_client.protocol.errors import ErrorCode
from duplex_client.server import ReferenceServer, Script

_SLOW = {
    "chunk_ms": 200,
    "chunk_interval_ms": 500,
    "defaults": {"commit": {"do": "speak", "text": "a b c d e f g h i j"}},
}


async def _next_turn_event(events: object) -> TurnEvent:
    async with asyncio.timeout(5):
        async for event in events:  # type: ignore[attr-defined]
            if isinstance(event, TurnEvent):
                return event
    raise AssertionError("no turn.event")


async def test_signal_turn_is_answered_by_a_typed_turn_event() -> None:
    async with (
        ReferenceServer(engine="scripted") as server,
        DuplexClient(server.url, model="m") as client,
    ):
        events = client.events()
        await client.signal_turn("user_started", {"source": "client_vad"})
        turn = await _next_turn_event(events)
        assert (turn.event, turn.turn_state, turn.epoch) == ("user_started", "user_speaking", 0)
        assert turn.session_id == client.session_id


async def test_signal_turn_barge_in_fences_the_playing_response() -> None:
    script = Script.from_dict(_SLOW)
    async with (
        ReferenceServer(engine="scripted", script=script) as server,
        DuplexClient(server.url, model="m") as client,
    ):
        events = client.events()
        await client.append_input(b"\x10\x20" * 6400)
        await client.commit()
        handle = await anext(aiter(client.responses()))
        assert handle.decision == "speak"
        await client.signal_turn("barge_in")
        assert handle.fenced  # at once, before the server answers
        turn = await _next_turn_event(events)
        assert (turn.event, turn.turn_state, turn.epoch) == ("barge_in", "barge_in", 1)
        await asyncio.wait_for(handle.wait(), 5)
        assert handle.status == "cancelled"


async def test_flat_handshake_error_raises_with_its_code() -> None:
    async with ReferenceServer(engine="scripted", require_ref_audio=True) as server:
        client = DuplexClient(server.url, model="m")
        with pytest.raises(DuplexProtocolError) as info:
            await client.connect()
        assert info.value.code == ErrorCode.REF_AUDIO_REQUIRED
        assert "ref_audio" in str(info.value)
        await client.close()


async def test_duplex_0_refusal_raises_unsupported() -> None:
    async with ReferenceServer(engine="scripted") as server:
        client = DuplexClient(server.url + "?duplex=0", model="m")
        with pytest.raises(DuplexProtocolError) as info:
            await client.connect()
        assert info.value.code == ErrorCode.UNSUPPORTED
        assert "Realtime API is not available" in str(info.value)
        await client.close()


async def test_resume_of_an_unknown_session_stops_at_once() -> None:
    async def no_wait(_s: float) -> None:
        return None

    policy = ReconnectPolicy(attempts=5, sleep=no_wait)
    async with ReferenceServer(engine="scripted") as server:

        async def connect() -> WebSocketTransport:
            return await WebSocketTransport.connect(server.url + "?duplex=1&autostart=0")

        def resume() -> ce.SessionResume:
            return ce.SessionResume(session_id="duplex-" + "0" * 32, resume_token="rt_x")

        with pytest.raises(ResumeFailed) as info:
            await resume_attempts(policy, connect, resume)
        # the nested handshake error is read, and session_resume_expired ends reconnection
        assert (info.value.code, info.value.attempts) == (ErrorCode.SESSION_RESUME_EXPIRED, 1)
