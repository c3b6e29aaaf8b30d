"""Fuzz: random and mutated client events at one session; the server stays up, others unharmed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duplex_client.protocol import (
    CLIENT_EVENT_TYPES,
    SchemaError,
    decode_client_event,
    dumps,
    loads,
)
from duplex_client.protocol.errors import ErrorCode
from duplex_client.server import Limits, ReferenceServer, Script
from tests.integration.server.wire import Wire, append, b64, frame, tone

_TYPES = [*CLIENT_EVENT_TYPES, "close", "push_chunk", "input.audio.append"]
# fmt: off
_FIELDS = [
    "event_id", "session", "audio", "video_frames", "is_speech", "format", "sample_rate_hz",
    "duration_ms", "audio_end_ms", "unit_index", "final", "response_create", "response",
    "response_id", "item_id", "played_ms", "committed_ms", "truncate", "server_event_seq",
    "item", "signal", "text", "max_slice_nums", "resume_token", "session_id",
]
# fmt: on

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
audio_values = st.one_of(
    st.binary(max_size=4000).map(b64),
    st.sampled_from([b64(tone(200)), b64(tone(1000)), "", "!!!", b64(b"\x01")]),
)
frame_values = st.lists(
    st.one_of(st.integers(0, 9).map(frame), st.binary(max_size=40).map(b64), st.text(max_size=6)),
    max_size=3,
)
_ANSWERS = ("session.heartbeat_ack", "session.closed", "session.expired")
_KNOBS = ["auto_response", "force_listen_count", "sliding_window_mode", "basic_window_low_tokens"]
session_values = st.fixed_dictionaries(
    {},
    optional={
        # within 64 bits: the server reads frames with orjson, which reads a longer integer
        # as a float, so a decoded event never holds one (test_known_nasty_messages sends one)
        "model": st.text(max_size=6) | st.integers(-(2**63), 2**63 - 1),
        "sample_rate_hz": st.sampled_from([16000, 24000, 1, "x"]),
        "input_audio_format": st.sampled_from(["pcm16", "pcm_f32le", "mp3", 3]),
        "turn_detection": st.none() | json_values,
        "extra_body": st.dictionaries(st.sampled_from(_KNOBS), json_values),
        "idle_timeout_s": st.sampled_from([30, 0, -1, "x"]),
        "playback_commit_policy": st.sampled_from(["ack_only", "commit_all_on_done", "?"]),
    },
)


@st.composite
def client_events(draw: st.DrawFn) -> dict[str, Any] | str | bytes:
    """A plausible, mutated or junk client message."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.text(max_size=30))
    if kind == 1:
        return draw(st.binary(min_size=1, max_size=30))
    event: dict[str, Any] = {"type": draw(st.sampled_from(_TYPES) | st.text(max_size=10))}
    if event["type"] in ("session.close", "close"):
        event["type"] = "session.heartbeat"  # closing early would end the fuzzing
    for key in draw(st.lists(st.sampled_from(_FIELDS), max_size=6, unique=True)):
        if key == "audio":
            event[key] = draw(audio_values)
        elif key == "video_frames":
            event[key] = draw(frame_values)
        elif key == "session":
            event[key] = draw(session_values)
        else:
            event[key] = draw(json_values)
    if draw(st.booleans()):
        event["event_id"] = f"evt_{draw(st.integers(0, 5))}"
    return event


@pytest.fixture(scope="module")
def threaded_server() -> Iterator[ReferenceServer]:
    """One server on its own event loop thread for the whole fuzz run."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    async def main() -> None:
        holder["stop"] = asyncio.Event()
        limits = Limits(max_sessions=8, disconnect_grace_s=0.05, first_message_timeout_s=5)
        async with ReferenceServer(
            limits=limits, script=Script.from_dict({"chunk_ms": 500})
        ) as srv:
            holder["server"] = srv
            ready.set()
            await holder["stop"].wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(10)
    yield holder["server"]
    loop.call_soon_threadsafe(holder["stop"].set)
    thread.join(10)


async def _exercise(url: str, messages: list[dict[str, Any] | str | bytes]) -> None:
    fuzz = await Wire.connect(url)
    await fuzz.open()
    other = await Wire.connect(url)
    await other.open()
    for message in messages:
        await fuzz.send(message)
    # the other session still works end to end
    await other.send(append(tone(400), event_id="evt_other"))
    await other.send({"type": "input_audio_buffer.commit", "event_id": "evt_other_c"})
    done = (await other.until("response.done"))[-1]
    assert done["response"]["status"] == "completed"
    # the fuzzed session either still answers or ended with a proper terminal event
    try:
        await fuzz.send({"type": "session.heartbeat", "event_id": "evt_probe"})
        await fuzz.until(lambda e: e["type"] in _ANSWERS)
    except Exception:
        assert any(e["type"] in ("session.closed", "session.expired") for e in fuzz.received)
    codes = [e["error"]["code"] for e in fuzz.received if e.get("type") == "error"]
    assert "internal_error" not in codes, codes
    for wire in (fuzz, other):  # free the session slots before the next example
        try:
            await wire.send({"type": "session.close"})
        except Exception:
            continue
        await wire.closed(timeout=10)


@settings(max_examples=300, deadline=None)
@given(message=client_events())
def test_schema_decodes_or_names_the_field(message: dict[str, Any] | str | bytes) -> None:
    """What the server decodes with: a `SchemaError` naming a field, or a canonical event."""
    if not isinstance(message, dict):
        return
    try:
        event = decode_client_event(message)
    except SchemaError as exc:
        assert exc.code in vars(ErrorCode).values() and isinstance(exc.param, str)
        return
    again = decode_client_event(loads(dumps(event.to_dict())))
    assert again == event


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(messages=st.lists(client_events(), min_size=1, max_size=25))
def test_fuzzed_session_never_hurts_the_server(threaded_server: ReferenceServer, messages) -> None:
    asyncio.run(asyncio.wait_for(_exercise(threaded_server.url, messages), 30))


def test_known_nasty_messages(threaded_server: ReferenceServer) -> None:
    doubled = {"type": "input_audio_buffer.append", "audio": b64(tone(200)) * 3}
    nasty: list[dict[str, Any] | str | bytes] = [
        "null",
        "[]",
        "1e999",
        '{"type": null}',
        '{"type": {}}',
        "\ud800".encode("utf-8", "surrogatepass"),
        orjson.dumps(doubled | {"video_frames": [frame(1)] * 2}).decode(),
        '{"type": "playback.ack", "response_id": "resp_x", "played_ms": 1180591620717411303424}',
        {"type": "session.update", "session": {"extra_body": {"force_listen_count": 2**62}}},
        {"type": "session.update", "session": {"model": 2**70}},  # beyond 64 bits
        {"type": "conversation.item.create", "item": {"id": 5}},
        {"type": "input_audio_buffer.commit", "final": False},
        {"type": "turn.signal", "event": "barge_in"},
    ]
    asyncio.run(asyncio.wait_for(_exercise(threaded_server.url, nasty), 30))
