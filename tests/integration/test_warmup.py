"""A warm-up hold (issue #29): a starting vLLM-Omni holds new duplex connections before their
upgrade until its warm-up session is done (`_wait_for_duplex_warmup`, 0.30.0); the reference
server's `warmup_s` does the same, and the SDK and `duplex-cli check` account for it."""

from __future__ import annotations

import json
import time

import pytest
from duplex_cli.check import run_check
from duplex_cli.check_table import render
from rich.console import Console
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from duplex_client import DuplexClient
from duplex_client.protocol.errors import DuplexConnectionError
from duplex_client.server import ReferenceServer
from tests.support.scripted_server import ScriptedServer


async def test_connections_wait_for_the_warmup_and_the_warmup_itself_passes() -> None:
    async with ReferenceServer(profile="minicpmo", engine="scripted", warmup_s=0.8) as server:
        started = time.monotonic()
        async with connect(server.url + "?duplex=1&vllm_omni_warmup=1"):
            passed = time.monotonic() - started
        async with connect(server.url + "?duplex=1&autostart=0"):
            held = time.monotonic() - started
        async with connect(server.url + "?duplex=1&autostart=0"):  # warm now: no wait
            after = time.monotonic() - started - held
    assert passed < 0.5 <= held and after < 0.5


async def test_the_client_waits_out_the_hold_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    async with ReferenceServer(profile="minicpmo", engine="scripted", warmup_s=2.5) as server:
        # a handshake timeout shorter than the hold: the hold does not count against it
        async with DuplexClient(server.url, handshake_timeout=1.0, reconnect=False) as client:
            assert client.session_id is not None
        assert 2.0 <= client.warmup_held_s < 10
    assert "held the connection" in caplog.text and "warming up" in caplog.text


async def test_a_hold_past_the_allowance_names_the_warmup() -> None:
    async with ReferenceServer(profile="minicpmo", engine="scripted", warmup_s=2) as server:
        client = DuplexClient(server.url, handshake_timeout=0.3, warmup_timeout=0.3)
        with pytest.raises(DuplexConnectionError) as info:
            await client.connect()
    message = str(info.value)
    assert "no answer to the WebSocket upgrade within 0.6 s" in message
    assert "warming up" in message and "180 s" in message


async def test_check_reports_the_hold_level_and_input_modes() -> None:
    async with ReferenceServer(profile="minicpmo", engine="scripted", warmup_s=2.5) as server:
        report = await run_check(server.url)
    assert report.ok, report.error
    shake = report.to_dict()["handshake"]
    assert shake["warmup_held_s"] >= 2.0
    assert shake["implementation_level"] == "model_native_duplex"
    assert shake["input_modes"] == ["append_audio_chunk"]
    assert shake["fallback"] is None
    console = Console(record=True, width=160)
    render(report, console)
    table = console.export_text()
    assert "held" in table and "before the upgrade (warming up)" in table
    assert "model_native_duplex; input modes append_audio_chunk" in table
    assert "turn-based fallback" in table


async def test_check_reports_a_request_that_reached_no_duplex_handler() -> None:
    """`?duplex=1` answered by a turn-based handler (a `session.created` without capabilities)
    or refused as vLLM-Omni 0.30.0 refuses it without a duplex handler (flat `unsupported`)."""

    async def refuse(conn: ServerConnection) -> None:
        flat = {"type": "error", "code": "unsupported", "error": "VAD realtime is not enabled"}
        await conn.send(json.dumps(flat))
        await conn.close(1008)

    async with ScriptedServer(no_capabilities=True) as turn_based:
        chat = await run_check(turn_based.url, timeout_s=3)
    assert "?duplex=1" in turn_based.peer.path
    async with serve(refuse, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        refused = await run_check(f"ws://127.0.0.1:{port}", timeout_s=3)
    for report, said in ((chat, "turn-based handler"), (refused, "refused (unsupported)")):
        assert not report.ok
        assert report.to_dict()["handshake"]["fallback"].startswith(said)
        console = Console(record=True, width=160)
        render(report, console)
        assert said in console.export_text()
