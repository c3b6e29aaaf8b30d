"""`turn_detection` as vLLM-Omni 0.30.0 checks it (issue #29, point 8): raw JSON on a socket.

`engine/duplex/turn_detection.py`: `server_vad` derives `overlap_policy: barge_in_on_speech`
(null derives `listen_only`), a contradicting policy is refused, unknown `server_vad` fields
are refused, the threshold is above Silero's 0.15 and at most 1, `min_speech_duration_ms`
defaults to 96, and `interrupt_response: false` is refused.
"""

from __future__ import annotations

from typing import Any

import pytest

from duplex_client.protocol.errors import ErrorCode
from duplex_client.server.config import speech_available
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import Wire

needs_speech = pytest.mark.skipif(not speech_available(), reason="needs the server extra (VAD)")
VAD = {"type": "server_vad"}


@needs_speech
async def test_server_vad_derives_barge_in_and_fills_upstreams_defaults(
    make_server: MakeServer,
) -> None:
    server = await make_server(profile="joyai", engine="speech", asr_worker=False)
    wire = await Wire.connect(server.url)
    created, _ = await wire.open(turn_detection=VAD)
    session = created["session"]
    assert session["overlap_policy"] == "barge_in_on_speech"
    assert session["turn_detection"] == {
        "type": "server_vad",
        "interrupt_response": True,
        "threshold": 0.5,
        "prefix_padding_ms": 300,
        "silence_duration_ms": 500,
        "min_speech_duration_ms": 96,
    }
    # null derives listen_only again
    await wire.send({"type": "session.update", "session": {"turn_detection": None}})
    updated = (await wire.until("session.updated"))[-1]["session"]
    assert updated["overlap_policy"] == "listen_only" and updated["turn_detection"] is None
    await wire.close()


@pytest.mark.parametrize(
    ("session", "words"),
    [
        ({"turn_detection": VAD, "overlap_policy": "listen_only"}, "conflicts with"),
        ({"turn_detection": None, "overlap_policy": "barge_in_on_speech"}, "'listen_only'"),
        ({"turn_detection": {**VAD, "interrupt_response": False}}, "interrupt_response"),
        ({"turn_detection": {**VAD, "threshold": 0.1}}, "threshold"),
        ({"turn_detection": {**VAD, "eagerness": "high"}}, "eagerness"),
    ],
)
async def test_refused_on_an_update(
    make_server: MakeServer, session: dict[str, Any], words: str
) -> None:
    server = await make_server()
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send({"type": "session.update", "event_id": "evt_u", "session": session})
    err = await wire.error(ErrorCode.UNSUPPORTED_TURN_DETECTION)
    assert words in err["error"]["message"] and err["error"]["event_id"] == "evt_u"
    await wire.close()
