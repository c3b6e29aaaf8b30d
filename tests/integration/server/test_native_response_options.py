"""`response.create` generation overrides: refused on a model-native profile, as vLLM-Omni's
MiniCPM-o / Nemotron sessions refuse them; taken by the chat lane (joyai)."""

from __future__ import annotations

from typing import Any

import pytest

from duplex_client.protocol import ErrorCode
from duplex_client.server import Script
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import answered_turn_request

SPEAK = Script.from_dict({"chunk_ms": 200, "defaults": {"commit": {"do": "speak", "text": "a b"}}})
OVERRIDES = [{"instructions": "be brief"}, {"temperature": 0.2}, {"max_output_tokens": 8}]


@pytest.mark.parametrize("profile", ["minicpmo", "nemotron"])
@pytest.mark.parametrize("response", OVERRIDES)
async def test_a_model_native_response_takes_no_generation_override(
    make_server: MakeServer, profile: str, response: dict[str, Any]
) -> None:
    server = await make_server(script=SPEAK, profile=profile)
    wire = await answered_turn_request(server.url, response)
    err = (await wire.error(ErrorCode.UNSUPPORTED_NATIVE_RESPONSE_OPTIONS))["error"]
    (name,) = response
    assert err["event_id"] == "evt_r" and err["param"] == f"response.{name}"
    # nothing was started: a plain request afterwards is answered
    await wire.send({"type": "response.create", "event_id": "evt_r2"})
    done = (await wire.until("response.done"))[-1]
    assert done["response"]["status"] == "completed"
    await wire.close()


@pytest.mark.parametrize("response", OVERRIDES)
async def test_the_chat_lane_takes_the_overrides(
    make_server: MakeServer, response: dict[str, Any]
) -> None:
    server = await make_server(script=SPEAK, profile="joyai")
    wire = await answered_turn_request(server.url, response)
    events = await wire.until("response.done")
    assert not [e for e in events if e["type"] == "error"]
    assert events[-1]["response"]["status"] == "completed"
    await wire.close()
