"""The first message, as vLLM-Omni 0.30.0's handler takes it (issue #29, point 7).

`RealtimeEnvelope` (`entrypoints/duplex/realtime_input.py`): `?model=X` without `autostart=0`
(or `resume=1`) opens a session before any client message; otherwise a first message other
than `session.update` or `session.resume` opens the default session and then runs as a
command, even with `autostart=0` or `resume=1`. Raw JSON on a real socket.
"""

from __future__ import annotations

import pytest

from duplex_client.server import ReferenceServer
from tests.integration.server.wire import Wire


async def test_a_model_in_the_url_opens_a_session_before_any_message(
    server: ReferenceServer,
) -> None:
    wire = await Wire.connect(server.url, query="duplex=1&model=some/model")
    created = await wire.recv()  # nothing was sent
    assert created["type"] == "session.created"
    assert created["session"]["model"] == "some/model"
    assert (await wire.recv())["type"] == "session.updated"
    await wire.close()


@pytest.mark.parametrize("query", ["duplex=1&model=m&autostart=0", "duplex=1&resume=1", "duplex=1"])
async def test_another_first_message_opens_the_default_session_and_runs(
    server: ReferenceServer, query: str
) -> None:
    wire = await Wire.connect(server.url, query=query)
    await wire.send({"type": "session.heartbeat", "event_id": "evt_hb"})
    events = await wire.until("session.heartbeat_ack")
    kinds = [e["type"] for e in events]
    assert kinds[0] == "session.created" and kinds[-1] == "session.heartbeat_ack"
    assert events[-1]["session_id"] == events[0]["session"]["id"]
    await wire.close()


async def test_a_first_command_that_fails_is_an_error_of_the_opened_session(
    server: ReferenceServer,
) -> None:
    wire = await Wire.connect(server.url, query="duplex=1&autostart=0")
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    err = await wire.error("input_audio_buffer_empty")
    assert err["error"]["event_id"] == "evt_c" and "server_event_seq" in err
    assert wire.received[0]["type"] == "session.created"
    await wire.close()
