"""Raw JSON, upstream's way: `turn.signal` / `turn.event`, the command aliases, `?duplex=0` (#20).

Each test sends the exact objects vLLM-Omni's clients send over a real loopback socket and
asserts the reply shapes upstream gives, in both event-name generations where names differ.
"""

from __future__ import annotations

import pytest

from duplex_client.protocol.errors import ErrorCode
from duplex_client.server import ReferenceServer, Script
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import Wire, append, is_flat_error, tone

GENERATIONS = ["ga", "beta"]
_SLOW = {
    "chunk_ms": 200,
    "chunk_interval_ms": 500,
    "defaults": {"commit": {"do": "speak", "text": "a b c d e f g h i j"}},
}


async def _slow(make_server: MakeServer, names: str) -> ReferenceServer:
    return await make_server(script=Script.from_dict(_SLOW), event_names=names)


async def _speaking(wire: Wire) -> str:
    """Start a paced response and wait for its first audio delta; its response id."""
    await wire.send(append(tone(400), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    first = await wire.until(lambda e: e["type"].endswith("audio.delta"))
    return str(first[-1]["response_id"])


# --- turn.signal / turn.event ---


@pytest.mark.parametrize("names", GENERATIONS)
async def test_turn_signal_barge_in_interrupts_and_answers_turn_event(
    make_server: MakeServer, names: str
) -> None:
    server = await _slow(make_server, names)
    wire = await Wire.connect(server.url)
    created, _ = await wire.open()
    sid = created["session"]["id"]
    rid = await _speaking(wire)
    await wire.send(
        {
            "type": "turn.signal",
            "event_id": "evt_ts",
            "event": "barge_in",
            "payload": {"source": "client_vad"},
        }
    )
    events = await wire.until("turn.event")
    types = [e["type"] for e in events]
    cleared = events[types.index("output_audio_buffer.cleared")]
    done = events[types.index("response.done")]
    assert cleared["response_id"] == rid and done["response_id"] == rid
    assert done["response"]["status"] == "cancelled"
    assert done["response"]["status_details"] == {"type": "cancelled", "reason": "barge_in"}
    turn = events[-1]
    assert {k: turn[k] for k in ("session_id", "event", "turn_state", "epoch")} == {
        "session_id": sid,
        "event": "barge_in",
        "turn_state": "barge_in",
        "epoch": 1,
    }
    assert "server_event_seq" in turn
    await wire.close()


@pytest.mark.parametrize("names", GENERATIONS)
async def test_turn_signals_move_the_turn_state(make_server: MakeServer, names: str) -> None:
    server = await make_server(event_names=names)
    wire = await Wire.connect(server.url)
    await wire.open()
    expected = [
        ("user_started", "user_speaking"),
        ("user_committed", "user_committed"),
        ("assistant_started", "assistant_generating"),
        ("playback_ack", "assistant_generating"),  # no move
        ("something_new", "assistant_generating"),  # unknown names are reported, no move
        ("assistant_done", "idle"),
    ]
    for i, (event, state) in enumerate(expected):
        kind = "signal_turn" if i % 2 else "turn.signal"  # upstream's alias too
        await wire.send({"type": kind, "event_id": f"evt_{i}", "event": event})
        turn = (await wire.until("turn.event"))[-1]
        assert (turn["event"], turn["turn_state"], turn["epoch"]) == (event, state, 0)
    await wire.close()


async def test_turn_signal_barge_in_with_nothing_playing_drops_pending_input(
    server: ReferenceServer,
) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(200), event_id="evt_a"))
    await wire.send({"type": "turn.signal", "event_id": "evt_b", "event": "barge_in"})
    events = await wire.until("turn.event")
    cleared = next(e for e in events if e["type"] == "input_audio_buffer.cleared")
    assert cleared["client_event_id"] == "evt_b" and cleared["epoch"] == 1
    assert (events[-1]["turn_state"], events[-1]["epoch"]) == ("barge_in", 1)
    # the dropped audio is gone: a commit has nothing to seal
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    await wire.error(ErrorCode.INPUT_AUDIO_BUFFER_EMPTY)
    # bare `barge_in` takes the same path (upstream maps both to one command)
    await wire.send({"type": "barge_in", "event_id": "evt_d"})
    cleared = (await wire.until("input_audio_buffer.cleared"))[-1]
    assert cleared["client_event_id"] == "evt_d" and cleared["epoch"] == 2
    await wire.close()


async def test_turn_signals_that_stand_for_other_events(make_server: MakeServer) -> None:
    server = await _slow(make_server, "ga")
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(
        {
            "type": "turn.signal",
            "event_id": "evt_u",
            "event": "session.update",
            "payload": {"instructions": "be brief"},
        }
    )
    updated = (await wire.until("session.updated"))[-1]
    assert updated["session"]["instructions"] == "be brief"
    await wire.send(
        {
            "type": "turn.signal",
            "event_id": "evt_i",
            "event": "conversation.item.create",
            "payload": {
                "item": {
                    "id": "item_note",
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "hi"}],
                }
            },
        }
    )
    added = (await wire.until("conversation.item.added"))[-1]
    assert added["item"]["id"] == "item_note"
    await wire.send(
        {
            "type": "turn.signal",
            "event_id": "evt_d",
            "event": "conversation.item.delete",
            "payload": {"item_id": "item_note"},
        }
    )
    assert (await wire.until("conversation.item.deleted"))[-1]["item_id"] == "item_note"
    rid = await _speaking(wire)
    # response.cancel with its id at the top level (upstream also reads payload.response_id)
    await wire.send(
        {"type": "turn.signal", "event_id": "evt_x", "event": "response.cancel", "response_id": rid}
    )
    done = (await wire.until("response.done"))[-1]
    assert done["response_id"] == rid and done["response"]["status"] == "cancelled"
    await wire.send(
        {"type": "turn.signal", "event_id": "evt_ic", "event": "input.cancel", "payload": {}}
    )
    cleared = (await wire.until("input_audio_buffer.cleared"))[-1]
    assert cleared["client_event_id"] == "evt_ic" and cleared["epoch"] == 2
    # none of them is answered by turn.event
    assert all(e["type"] != "turn.event" for e in wire.received)
    await wire.close()


@pytest.mark.parametrize(
    ("event", "code", "param"),
    [
        ({"type": "turn.signal", "signal": "barge_in"}, ErrorCode.BAD_EVENT, "event"),
        ({"type": "turn.signal", "event": ""}, ErrorCode.BAD_EVENT, "event"),
        ({"type": "turn.signal", "event": 3}, ErrorCode.BAD_EVENT, "event"),
        ({"type": "turn.signal", "event": "session.update"}, ErrorCode.BAD_EVENT, "payload"),
        (
            {"type": "turn.signal", "event": "conversation.item.delete", "payload": {}},
            ErrorCode.MISSING_ITEM_ID,
            "item_id",
        ),
        (
            {"type": "turn.signal", "event": "conversation.item.create", "payload": {}},
            ErrorCode.BAD_EVENT,
            "item",
        ),
    ],
)
async def test_bad_turn_signals(server: ReferenceServer, event, code: str, param: str) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send({**event, "event_id": "evt_bad"})
    err = await wire.error(code)
    assert err["error"]["param"] == param and err["error"]["event_id"] == "evt_bad"
    await wire.close()


# --- command aliases ---


@pytest.mark.parametrize("names", GENERATIONS)
async def test_input_commit_alias_commits_and_answers(make_server: MakeServer, names: str) -> None:
    server = await make_server(event_names=names)
    wire = await Wire.connect(server.url)
    await wire.open(extra_body={"auto_response": False})
    await wire.send(append(tone(400), event_id="evt_a"))
    # upstream: `input.commit` asks for a response unless `response_create` says otherwise
    await wire.send({"type": "input.commit", "event_id": "evt_c"})
    events = await wire.until("response.done")
    committed = next(e for e in events if e["type"] == "input_audio_buffer.committed")
    assert committed["client_event_id"] == "evt_c"
    assert events[-1]["response"]["status"] == "completed"
    await wire.send(append(tone(400), event_id="evt_a2"))
    await wire.send({"type": "input.commit", "event_id": "evt_c2", "response_create": False})
    await wire.until("input_audio_buffer.committed")
    await wire.send({"type": "session.heartbeat"})
    later = await wire.until("session.heartbeat_ack")
    assert all(e["type"] != "response.created" for e in later)
    await wire.close()


@pytest.mark.parametrize("kind", ["input.text.append", "input_text.append", "push_text"])
async def test_text_append_aliases(server: ReferenceServer, kind: str) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send({"type": kind, "event_id": "evt_t", "text": "hello"})
    err = await wire.error(ErrorCode.NATIVE_TEXT_APPEND_UNSUPPORTED)
    assert err["error"]["event_id"] == "evt_t"
    # upstream requires the text
    await wire.send({"type": kind, "event_id": "evt_t2"})
    err = await wire.error(ErrorCode.BAD_EVENT)
    assert err["error"]["param"] == "text"
    await wire.close()


@pytest.mark.parametrize("kind", ["playback.ack", "audio.playback_ack"])
async def test_playback_ack_alias(server: ReferenceServer, kind: str) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(300), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    rid = (await wire.until("response.done"))[-1]["response_id"]
    await wire.send({"type": kind, "event_id": "evt_p", "response_id": rid, "played_ms": 120})
    ack = (await wire.until("playback.acknowledged"))[-1]
    assert ack["played_ms"] == 120 and ack["item_id"] == f"item_{rid}"
    await wire.close()


@pytest.mark.parametrize("kind", ["push_chunk", "input.audio.append", "session_close"])
async def test_names_upstream_rejects_are_unknown(server: ReferenceServer, kind: str) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(200), event_id="evt_x") | {"type": kind})
    err = await wire.error(ErrorCode.UNKNOWN_EVENT)
    assert err["error"]["param"] == "type" and err["error"]["event_id"] == "evt_x"
    # nothing was appended
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    await wire.error(ErrorCode.INPUT_AUDIO_BUFFER_EMPTY)
    await wire.close()


# --- ?duplex=0 ---


@pytest.mark.parametrize("value", ["0", "false", "off"])
async def test_duplex_0_is_refused_like_upstream(server: ReferenceServer, value: str) -> None:
    wire = await Wire.connect(server.url, query=f"duplex={value}&model=test-model")
    err = await wire.recv()
    assert is_flat_error(err, ErrorCode.UNSUPPORTED)
    assert err["error"] == "Realtime API is not available"
    code, rest = await wire.closed()
    assert code == 1000 and rest == []
    assert server.session_ids() == []


async def test_duplex_0_on_the_duplex_path_still_opens(server: ReferenceServer) -> None:
    url = server.url.replace("/v1/realtime", "/v1/duplex")
    wire = await Wire.connect(url, query="duplex=0&autostart=0")
    created, _ = await wire.open()
    assert created["session"]["id"] in server.session_ids()
    await wire.close()
