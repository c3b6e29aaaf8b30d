"""`unsupported_model` (issue #29): raw JSON from the server, and what the client makes of it.

An older vllm-project/vllm-omni `entrypoints/duplex/openai.py` refuses a request naming another
model before any message: nested, `param: "model"`, close 1008. vLLM-Omni 0.30.0 answers a
`?duplex=1` request on a deployment without a duplex handler with a flat `unsupported`
("VAD realtime is not enabled") and close 1008. The SDK reads both and says which it was.
"""

from __future__ import annotations

import json

import pytest
from websockets.asyncio.server import ServerConnection, serve

from duplex_client import DuplexClient
from duplex_client.client.http import fetch_models
from duplex_client.protocol.errors import DuplexProtocolError, ErrorCode
from duplex_client.server import ReferenceServer
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import Wire, is_handshake_error, session_update


async def test_another_model_in_the_url_is_refused_before_any_message(
    make_server: MakeServer,
) -> None:
    server = await make_server(served_model="served/one")
    wire = await Wire.connect(server.url, query="duplex=1&model=other/two&autostart=0")
    err = await wire.recv()
    assert is_handshake_error(err, ErrorCode.UNSUPPORTED_MODEL)
    assert err["error"] == {
        "type": "invalid_request_error",
        "code": "unsupported_model",
        "message": "Model 'other/two' is not available",
        "param": "model",
    }
    code, rest = await wire.closed()
    assert code == 1008 and rest == []


async def test_another_model_in_the_session_is_refused(make_server: MakeServer) -> None:
    server = await make_server(served_model="served/one")
    wire = await Wire.connect(server.url, query="duplex=1&autostart=0")
    await wire.send(session_update(model="other/two"))
    err = await wire.error(ErrorCode.UNSUPPORTED_MODEL)
    assert err["error"]["param"] == "model"
    code, _ = await wire.closed()
    assert code == 1008
    assert server.session_ids() == []
    ok = await Wire.connect(server.url, query="duplex=1&model=served/one&autostart=0")
    created, _ = await ok.open(model="served/one")
    assert created["session"]["model"] == "served/one"
    await ok.close()


async def test_the_served_model_is_listed(make_server: MakeServer) -> None:
    server = await make_server(served_model="served/one")
    assert await fetch_models(server.url) == ("served/one",)


async def test_the_client_names_the_model_the_server_does_not_serve() -> None:
    async with ReferenceServer(engine="scripted", served_model="served/one") as server:
        with pytest.raises(DuplexProtocolError) as info:
            async with DuplexClient(server.url, model="other/two", reconnect=False):
                pass
    assert info.value.code == ErrorCode.UNSUPPORTED_MODEL
    assert str(info.value).startswith(
        "unsupported_model: the server does not serve 'other/two' for duplex sessions"
    )


async def test_the_client_reads_a_deployment_without_a_duplex_handler() -> None:
    """vLLM-Omni 0.30.0's answer (flat, close 1008) when no duplex handler is mounted."""

    async def refuse(conn: ServerConnection) -> None:
        flat = {"type": "error", "code": "unsupported", "error": "VAD realtime is not enabled"}
        await conn.send(json.dumps(flat))
        await conn.close(1008)

    async with serve(refuse, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(DuplexProtocolError) as info:
            async with DuplexClient(f"ws://127.0.0.1:{port}", model="m", reconnect=False):
                pass
    assert info.value.code == ErrorCode.UNSUPPORTED
    assert "no duplex handler at this endpoint ('m'): VAD realtime is not enabled" in str(
        info.value
    )
