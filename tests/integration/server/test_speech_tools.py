"""The speech engine's get_time tool: a spoken "what time is it" calls it when declared."""

from __future__ import annotations

import json

from tests.integration.server.conftest import MakeServer
from tests.integration.server.speech import needs_speech, of_type, send_pcm, spoken, transcripts
from tests.integration.server.wire import Wire

pytestmark = needs_speech

GET_TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object"}}


async def test_asking_the_time_calls_get_time_and_speaks_its_output(
    make_server: MakeServer,
) -> None:
    server = await make_server(profile="minicpmo", engine="speech", tools=True)
    wire = await Wire.connect(server.url)
    await wire.open(tools=[GET_TIME])
    await send_pcm(wire, spoken("what time is it", lead_ms=600, tail_ms=1600), "a")
    events = await wire.until("response.function_call_arguments.done")
    call = of_type(events, "response.output_item.added")[-1]["item"]
    assert (call["type"], call["name"], call["arguments"]) == ("function_call", "get_time", "{}")
    assert not of_type(events, "response.output_audio.delta")  # the call is not spoken
    await wire.until("response.done")
    output = {"type": "function_call_output", "call_id": call["call_id"]}
    output["output"] = json.dumps({"time": "half past twelve"})
    await wire.send({"type": "conversation.item.create", "event_id": "o1", "item": output})
    follow = await wire.until("response.done")
    assert transcripts(follow) == ["It is half past twelve."]
    assert of_type(follow, "response.output_audio.delta")
    await wire.close()


async def test_without_the_tool_declared_the_engine_just_answers(make_server: MakeServer) -> None:
    server = await make_server(profile="minicpmo", engine="speech", tools=True)
    wire = await Wire.connect(server.url)
    await wire.open()
    await send_pcm(wire, spoken("what time is it", lead_ms=600, tail_ms=1600), "a")
    events = await wire.until("response.done")
    assert not of_type(events, "response.function_call_arguments.done")
    assert transcripts(events) == ["You said: what time is it."]
    await wire.close()
