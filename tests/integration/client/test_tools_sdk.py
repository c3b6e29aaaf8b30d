"""Function calling through the SDK against the reference server (scripted calls)."""

from __future__ import annotations

import asyncio
import json
import math
import struct
from collections.abc import AsyncIterator
from typing import Any

import pytest

from duplex_client import DuplexClient, FunctionCall, SessionConfig
from duplex_client.client.responses import ResponseHandle
from duplex_client.server import ReferenceServer
from duplex_client.server.engine.script import Script

TIMEOUT = 10.0
GET_TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object"}}
ADD = {"name": "add", "description": "a + b"}


def tone(ms: int) -> bytes:
    n = 16 * ms
    return b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / 16000))) for i in range(n)
    )


def _calls(*calls: dict[str, Any]) -> Script:
    """Commit `i` calls `calls[i]`."""
    rules = [{"on": "commit", "index": i, "do": "call", **c} for i, c in enumerate(calls)]
    return Script.from_dict({"rules": rules})


async def _turn(client: DuplexClient) -> None:
    await client.append_input(tone(1000))
    await client.wait_committed(await client.commit(), timeout=TIMEOUT)


async def _spoken(client: DuplexClient) -> ResponseHandle:
    async with asyncio.timeout(TIMEOUT):
        async for handle in client.responses():
            if handle.decision == "speak":
                return await handle.wait(TIMEOUT)
    raise AssertionError("no spoken follow-up")


def test_config_refuses_a_tool_declared_twice() -> None:
    with pytest.raises(ValueError, match="'get_time' is declared twice"):
        SessionConfig(tools=(GET_TIME, GET_TIME))
    with pytest.raises(ValueError, match="tool_choice names 'add'"):
        SessionConfig(tools=(GET_TIME,), tool_choice={"type": "function", "name": "add"})
    cfg = SessionConfig(tools=(ADD,), tool_choice="required")
    session = cfg.to_session(None)
    assert session["tools"] == [{"type": "function", "name": "add", "description": "a + b"}]
    assert session["tool_choice"] == "required"
    assert "tools" not in SessionConfig().to_session(None)


async def test_handler_round_trip() -> None:
    """Scripted call → async handler → function_call_output → the server's spoken follow-up."""
    script = _calls({"name": "add", "arguments": {"a": 2, "b": 3}, "call_id": "call_add"})
    async with ReferenceServer(engine="scripted", tools=True, script=script) as server:
        config = SessionConfig(tools=(ADD,))
        async with DuplexClient(server.url, model="m", config=config) as client:
            assert client.capabilities.supports_tools is True
            seen: list[tuple[Any, FunctionCall]] = []

            async def add(args: Any, call: FunctionCall) -> dict[str, int]:
                seen.append((args, call))
                return {"sum": args["a"] + args["b"]}

            client.on_function_call("add", add)
            await _turn(client)
            answer = await _spoken(client)
            assert answer.transcript == 'The add function returned {"sum": 5}.'
            assert answer.metadata["trigger"] == "function_call_output"
            ((args, call),) = seen
            assert args == {"a": 2, "b": 3} and call.call_id == "call_add"
            (record,) = client.function_call_records
            assert record.answered_by == "handler" and record.output == '{"sum": 5}'
            assert record.error is None
            call_handle = client.tracker.handles[call.response_id or ""]
            assert call_handle.decision == "listen"  # a call is not speech
            assert call_handle.function_calls[0]["name"] == "add"


async def test_iterator_raising_handler_and_unknown_function() -> None:
    script = _calls(
        {"name": "get_time", "call_id": "c_iter"},
        {"name": "add", "arguments": "{}", "call_id": "c_fail"},
        {"name": "launch", "call_id": "c_unknown"},
    )
    async with ReferenceServer(engine="scripted", tools=True, script=script) as server:
        config = SessionConfig(tools=(GET_TIME, ADD))
        async with DuplexClient(server.url, model="m", config=config) as client:

            def broken(args: Any, call: FunctionCall) -> str:
                raise KeyError("a")

            client.on_function_call("add", broken)
            await _turn(client)
            async with asyncio.timeout(TIMEOUT):
                call = await anext(aiter(client.function_calls()))
            assert (call.name, call.call_id, call.parsed()) == ("get_time", "c_iter", {})
            await client.answer_function_call(call, "noon")
            assert (await _spoken(client)).transcript == "The get_time function returned noon."

            await _turn(client)
            failed = await _spoken(client)
            assert failed.transcript == 'The add function returned {"error": "KeyError: \'a\'"}.'

            await _turn(client)
            unknown = await _spoken(client)
            assert "unknown function 'launch'" in unknown.transcript
            by_id = {r.call.call_id: r for r in client.function_call_records}
            assert by_id["c_iter"].answered_by == "iterator" and by_id["c_iter"].output == "noon"
            assert by_id["c_fail"].error == "KeyError: 'a'"
            assert by_id["c_unknown"].answered_by == "unknown_function"
            assert json.loads(by_id["c_unknown"].output or "")["error"].startswith("unknown")
            sent = [json.loads(r.output or "") for r in client.function_call_records[1:]]
            assert all("error" in s for s in sent)


async def test_the_iterator_ends_with_the_session() -> None:
    """Closed by the client (`session.closed`), or dropped without one (no reconnection)."""
    for drop in (False, True):
        server = ReferenceServer(engine="scripted", tools=True)
        await server.start()
        config = SessionConfig(tools=(ADD,))
        client = DuplexClient(server.url, model="m", config=config, reconnect=False)
        await client.connect()

        async def take(calls: AsyncIterator[FunctionCall]) -> list[FunctionCall]:
            return [call async for call in calls]

        taking = asyncio.create_task(take(client.function_calls()))
        await asyncio.sleep(0)
        if drop:
            await server.stop()
        else:
            await client.close()
        async with asyncio.timeout(TIMEOUT):
            assert await taking == []
        await client.close()
        await server.stop()


def test_the_blocking_client_answers_calls() -> None:
    from duplex_client.sync import SyncDuplexClient

    script = _calls({"name": "add", "arguments": {"a": 1, "b": 1}, "call_id": "c_sync"})

    async def serve() -> None:
        async with ReferenceServer(engine="scripted", tools=True, script=script) as server:
            await asyncio.to_thread(_blocking_round_trip, server.url, SyncDuplexClient)

    asyncio.run(serve())


def _blocking_round_trip(url: str, sync_client: Any) -> None:
    with sync_client(url, model="m", config=SessionConfig(tools=(ADD,))) as client:
        client.on_function_call("add", lambda args, call: args["a"] + args["b"])
        client.append_input(tone(1000))
        client.wait_committed(client.commit(), timeout=TIMEOUT)
        for handle in client.responses(idle_s=TIMEOUT):
            if handle.decision == "speak":
                done = handle.wait(TIMEOUT)
                assert done.transcript == "The add function returned 2."
                return
        raise AssertionError("no spoken follow-up")


async def test_a_malformed_call_is_kept_and_not_answered() -> None:
    script = _calls({"name": "add", "malformed": True})
    config = SessionConfig(tools=(ADD,))
    async with (
        ReferenceServer(engine="scripted", tools=True, script=script) as server,
        DuplexClient(server.url, model="m", config=config) as c,
    ):
        await c.append_input(tone(1000))
        await c.commit()
        async with asyncio.timeout(TIMEOUT):
            async for event in c.events():
                if event.type == "duplex.function_call.done":
                    break
        assert c._tools.malformed == [
            {"type": "function_call.done", "name": "add", "arguments": "{}"}
        ]
        assert c.function_call_records == []
    async with (
        ReferenceServer(engine="scripted") as plain,
        DuplexClient(plain.url, model="m") as c,
    ):
        assert c.capabilities.supports_tools is False
