"""The SDK reads `overlap.decision` and `…input_audio_transcription.completed` (tolerantly)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from duplex_client import DuplexClient, SessionConfig
from duplex_client.protocol import parse_server_event
from duplex_client.protocol.errors import DuplexProtocolError
from duplex_client.protocol.response_events import OverlapDecision
from duplex_client.protocol.server_events import InputAudioTranscriptionCompleted, ServerEvent
from duplex_client.server import ReferenceServer
from tests.support.scripted_server import ScriptedServer


async def _next(sub: Any, etype: str, timeout: float = 5.0) -> ServerEvent:
    async def loop() -> ServerEvent:
        while True:
            event: ServerEvent = await sub.get()
            if event.type == etype:
                return event

    return await asyncio.wait_for(loop(), timeout)


def test_overlap_decision_decodes_and_tolerates_ill_typed_fields() -> None:
    raw = {
        "type": "overlap.decision",
        "session_id": "duplex-1",
        "epoch": 2,
        "policy": "barge_in_on_speech",
        "action": "barge_in",
        "reason": "server_vad_speech_started",
        "metadata": {"duration_ms": 200, "cancel_reason": "turn_detected"},
    }
    event = parse_server_event(raw)
    assert isinstance(event, OverlapDecision)
    assert (event.session_id, event.epoch, event.policy, event.action, event.reason) == (
        "duplex-1",
        2,
        "barge_in_on_speech",
        "barge_in",
        "server_vad_speech_started",
    )
    assert event.metadata["cancel_reason"] == "turn_detected"
    odd = parse_server_event({"type": "overlap.decision", "epoch": "x", "metadata": [1], "n": 1})
    assert isinstance(odd, OverlapDecision)
    assert (odd.epoch, odd.action, odd.metadata, odd.raw["n"]) == (None, None, {}, 1)


def test_transcription_and_session_fields_decode() -> None:
    raw = {
        "type": "conversation.item.input_audio_transcription.completed",
        "item_id": "item_1",
        "content_index": 0,
        "transcript": "hello there",
    }
    event = parse_server_event(raw)
    assert isinstance(event, InputAudioTranscriptionCompleted)
    assert (event.item_id, event.content_index, event.transcript) == ("item_1", 0, "hello there")
    bad = parse_server_event({**raw, "content_index": "0", "transcript": None})
    assert isinstance(bad, InputAudioTranscriptionCompleted)
    assert (bad.content_index, bad.transcript) == (0, "")


async def test_sdk_events_carry_a_peer_s_overlap_and_transcription_events() -> None:
    async with ScriptedServer() as server, DuplexClient(server.url, model="m") as client:
        sub = client.events()
        await server.peer.send({"type": "overlap.decision", "action": "drop", "epoch": "?"})
        decision = await _next(sub, "overlap.decision")
        assert isinstance(decision, OverlapDecision) and decision.action == "drop"
        done = "conversation.item.input_audio_transcription.completed"
        await server.peer.send({"type": done, "item_id": "item_9", "transcript": "hi"})
        heard = await _next(sub, done)
        assert isinstance(heard, InputAudioTranscriptionCompleted) and heard.transcript == "hi"
        assert client.is_open


async def test_sdk_session_config_sends_the_knobs() -> None:
    config = SessionConfig(
        overlap_short_ack_ms=250,
        overlap_barge_in_ms=900,
        overlap_silence_rms=0.01,
        input_audio_transcription={"model": "any"},
    )
    async with (
        ReferenceServer(engine="scripted") as server,
        DuplexClient(server.url, model="m", config=config) as client,
    ):
        session = client.session
        assert (session["overlap_short_ack_ms"], session["overlap_barge_in_ms"]) == (250, 900)
        assert session["overlap_silence_rms"] == 0.01
        assert session["input_audio_transcription"] == {"model": "any"}
        assert session["overlap_policy"] == "listen_only"  # turn_detection null derives it


async def test_barge_in_without_server_vad_is_refused_as_upstream_does() -> None:
    """The SDK sends `turn_detection: null`, which derives `listen_only` (vLLM-Omni 0.30.0
    `turn_detection.py`): asking for `barge_in_on_speech` with it is a refused pair."""
    config = SessionConfig(overlap_policy="barge_in_on_speech")
    async with ReferenceServer(engine="scripted") as server:
        with pytest.raises(DuplexProtocolError) as info:
            async with DuplexClient(server.url, model="m", config=config, reconnect=False):
                pass
    assert info.value.code == "invalid_session_config"
    assert "conflicts with turn_detection" in str(info.value)
