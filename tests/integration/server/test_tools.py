"""Conformance: function calling as raw JSON over a loopback socket (protocol.md "Tools")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from duplex_client.server.engine.script import Script
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import Wire, append, tone

GET_TIME = {
    "type": "function",
    "name": "get_time",
    "description": "The current time of day.",
    "parameters": {"type": "object", "properties": {}},
}
#: The first commit calls get_time({"tz": "UTC"}) as call_time.
CALL_ON_COMMIT = Script.from_dict(
    {
        "rules": [
            {
                "on": "commit",
                "index": 0,
                "do": "call",
                "name": "get_time",
                "arguments": {"tz": "UTC"},
                "call_id": "call_time",
            }
        ]
    }
)
#: The call sequence vLLM-Omni projects (GA names), then the follow-up is a spoken response.
CALL_SEQUENCE = [
    "response.created",
    "conversation.item.added",
    "conversation.item.created",
    "response.output_item.added",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.done",
    "conversation.item.done",
    "response.done",
]


async def _tools_session(make_server: MakeServer, **server: Any) -> Wire:
    srv = await make_server(tools=True, script=CALL_ON_COMMIT, **server)
    wire = await Wire.connect(srv.url)
    return wire


async def _commit(wire: Wire) -> None:
    await wire.send(append(tone(1000), event_id="a0"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "c0"})


def _after_commit(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events after `conversation.item.done` of the user turn."""
    done = next(i for i, e in enumerate(events) if e["type"] == "conversation.item.done")
    return events[done + 1 :]


async def test_session_declares_and_echoes_tools(make_server: MakeServer) -> None:
    wire = await _tools_session(make_server)
    created, updated = await wire.open(tools=[GET_TIME], tool_choice="auto")
    assert created["session"]["capabilities"]["supports_tools"] is True
    assert updated["session"]["tools"] == [GET_TIME]
    assert updated["session"]["tool_choice"] == "auto"
    choice = {"type": "function", "name": "get_time"}
    await wire.send(
        {"type": "session.update", "event_id": "u1", "session": {"tool_choice": choice}}
    )
    (again,) = await wire.until("session.updated")
    assert again["session"]["tool_choice"] == choice and again["session"]["tools"] == [GET_TIME]
    await wire.close()


@pytest.mark.parametrize(
    ("session", "param", "says"),
    [
        ({"tools": [GET_TIME, GET_TIME]}, "tools", "declared twice"),
        ({"tools": [{"type": "web_search", "name": "x"}]}, "tools", "tools[0].type"),
        ({"tools": [{"type": "function", "name": ""}]}, "tools", "tools[0].name"),
        ({"tools": {"name": "get_time"}}, "tools", "must be a list"),
        ({"tools": [GET_TIME], "tool_choice": "always"}, "tool_choice", "tool_choice"),
        ({"tool_choice": {"type": "function", "name": "nope"}}, "tool_choice", "'nope'"),
    ],
)
async def test_bad_tools_are_invalid_tools(
    make_server: MakeServer, session: dict[str, Any], param: str, says: str
) -> None:
    wire = await _tools_session(make_server)
    await wire.open()
    await wire.send({"type": "session.update", "event_id": "u_bad", "session": session})
    err = await wire.error("invalid_tools")
    assert err["error"]["type"] == "invalid_request_error"
    assert err["error"]["param"] == param and says in err["error"]["message"], err
    assert err["error"]["event_id"] == "u_bad"
    await wire.close()


async def test_a_profile_without_tools_refuses_them(make_server: MakeServer) -> None:
    server = await make_server()
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    assert created["session"]["capabilities"]["supports_tools"] is False
    await wire.send({"type": "session.update", "event_id": "u1", "session": {"tools": [GET_TIME]}})
    err = await wire.error("invalid_tools")
    assert "supports_tools" in err["error"]["message"] and err["error"]["param"] == "tools"
    await wire.close()


@pytest.mark.parametrize("names", ["ga", "beta"])
async def test_scripted_call_output_and_follow_up(make_server: MakeServer, names: str) -> None:
    wire = await _tools_session(make_server, event_names=names)
    await wire.open(tools=[GET_TIME])
    await _commit(wire)
    events = _after_commit(await wire.until("response.done"))
    expected = list(CALL_SEQUENCE)
    if names == "beta":
        expected.remove("conversation.item.added")  # beta has `.created` only
    assert [e["type"] for e in events] == expected
    created, done = events[0], events[-1]
    rid = created["response"]["id"]
    assert created["response"]["status"] == "in_progress" and created["response"]["output"] == []
    item = events[1]["item"]
    assert item == {
        "id": item["id"],
        "object": "realtime.item",
        "type": "function_call",
        "status": "completed",
        "name": "get_time",
        "call_id": "call_time",
        "arguments": '{"tz":"UTC"}',
    }
    delta = next(e for e in events if e["type"] == "response.function_call_arguments.delta")
    args_done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    for event in (delta, args_done):
        assert event["response_id"] == rid and event["item_id"] == item["id"]
        assert event["call_id"] == "call_time" and event["output_index"] == 0
    assert delta["delta"] == args_done["arguments"] == '{"tz":"UTC"}'
    assert done["response"]["status"] == "completed" and done["response"]["output"] == [item]
    assert done["response"]["status_details"] == {"type": "completed", "reason": "completed"}

    output = {"type": "function_call_output", "call_id": "call_time", "output": '{"time":"12:00"}'}
    await wire.send({"type": "conversation.item.create", "event_id": "o1", "item": output})
    follow = await wire.until("response.done")
    added = follow[0]
    assert added["type"] == (
        "conversation.item.created" if names == "beta" else "conversation.item.added"
    )
    assert (
        added["item"]["type"] == "function_call_output" and added["item"]["call_id"] == "call_time"
    )
    assert added["previous_item_id"] == item["id"]
    kinds = [e["type"] for e in follow]
    assert kinds.index("conversation.item.done") < kinds.index("response.created")
    answer = follow[-1]["response"]
    assert answer["metadata"]["trigger"] == "function_call_output"
    assert answer["metadata"]["function_call"] == {"name": "get_time", "call_id": "call_time"}
    transcript = answer["output"][0]["content"][0]["transcript"]
    assert transcript == 'The get_time function returned {"time":"12:00"}.'
    await wire.close()


async def test_function_output_errors(make_server: MakeServer) -> None:
    wire = await _tools_session(make_server)
    await wire.open(tools=[GET_TIME])
    await _commit(wire)
    await wire.until("response.done")

    def create(eid: str, **item: Any) -> dict[str, Any]:
        body = {"type": "function_call_output", **item}
        return {"type": "conversation.item.create", "event_id": eid, "item": body}

    await wire.send(create("e1", call_id="call_nope", output="x"))
    err = await wire.error("unknown_function_call")
    assert err["error"]["param"] == "item.call_id" and err["error"]["event_id"] == "e1"
    for eid, item, param in (
        ("e2", {"output": "x"}, "item.call_id"),
        ("e3", {"call_id": "call_time", "output": {"time": "12:00"}}, "item.output"),
        ("e4", {"call_id": "", "output": "x"}, "item.call_id"),
    ):
        await wire.send(create(eid, **item))
        err = await wire.error("invalid_function_call_output")
        assert err["error"]["type"] == "invalid_request_error"
        assert err["error"]["param"] == param and err["error"]["event_id"] == eid, err
    await wire.send(create("e5", call_id="call_time", output="12:00"))
    await wire.until("response.done")  # accepted: the follow-up
    await wire.send(create("e6", call_id="call_time", output="12:01"))
    err = await wire.error("duplicate_function_output")
    assert err["error"]["event_id"] == "e6" and err["error"]["type"] == "invalid_request_error"
    await wire.close()


async def test_a_malformed_engine_call_is_passed_on_raw(make_server: MakeServer) -> None:
    script = Script.from_dict(
        {"rules": [{"on": "commit", "do": "call", "name": "get_time", "malformed": True}]}
    )
    server = await make_server(tools=True, script=script)
    wire = await Wire.connect(server.url)
    await wire.open(tools=[GET_TIME])
    await _commit(wire)
    (raw,) = [e for e in await wire.until("duplex.function_call.done")][-1:]
    assert raw["event"] == {"type": "function_call.done", "name": "get_time", "arguments": "{}"}
    await wire.close()


async def test_a_follow_up_waits_for_the_active_response(make_server: MakeServer) -> None:
    """The output arrives while an answer plays: the follow-up starts after its `done`."""
    script = Script.from_dict(
        {
            "chunk_interval_ms": 50,
            "rules": [
                {"on": "commit", "index": 0, "do": "call", "name": "get_time", "call_id": "c1"},
                {"on": "commit", "index": 1, "do": "speak", "text": "one two three four"},
            ],
        }
    )
    server = await make_server(tools=True, script=script)
    wire = await Wire.connect(server.url)
    await wire.open(tools=[GET_TIME], extra_body={"auto_response": True})
    await _commit(wire)
    await wire.until("response.done")
    await wire.send(append(tone(1000), event_id="a1"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "c1"})
    await wire.until("response.speak")
    item = {"type": "function_call_output", "call_id": "c1", "output": json.dumps("noon")}
    await wire.send({"type": "conversation.item.create", "event_id": "o1", "item": item})
    first = await wire.until("response.done")
    assert first[-1]["response"]["metadata"]["trigger"] == "commit"
    second = await wire.until("response.done")
    assert second[-1]["response"]["metadata"]["trigger"] == "function_call_output"
    await wire.close()
