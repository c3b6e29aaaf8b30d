"""Fuzz the client's reader with malformed server frames: it reports errors and never hangs.

Random frames (binary, non-JSON text, JSON that is not an object, objects of every known event
type with fields of random types and values, error events in both shapes) follow a valid
`session.created`; then the socket ends. Each example must end within a few seconds with the
reader finished cleanly, every `error` event recorded, and the iterators closed.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duplex_client import DuplexClientBase
from duplex_client.client.transport import TransportClosed
from duplex_client.protocol import GA_TO_BETA, SERVER_EVENT_TYPES, parse_server_event
from duplex_client.protocol.codec import CodecError, dumps, loads
from duplex_client.protocol.events import TERMINAL_EVENT_TYPES
from tests.support.scripted_server import DEFAULT_CAPS

#: Per-example bound: the client must be done well within it.
EXAMPLE_TIMEOUT_S = 5.0

CREATED = {
    "type": "session.created",
    "resume_token": "rt_fuzz",
    "session": {"id": "duplex-" + "f" * 32, "capabilities": DEFAULT_CAPS},
}

scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
#: Field names the client reads somewhere, so random values hit the typed paths.
KEYS = st.sampled_from(
    [
        "server_event_seq",
        "event_id",
        "response_id",
        "item_id",
        "delta",
        "transcript",
        "text",
        "format",
        "sample_rate_hz",
        "metadata",
        "response",
        "session",
        "input",
        "client_event_id",
        "audio_end_ms",
        "no_response",
        "event",
        "error",
        "code",
        "reason",
        "attempt",
    ]
)
TYPES = sorted(set(SERVER_EVENT_TYPES) - TERMINAL_EVENT_TYPES - {"error"})
typed_events = st.builds(
    lambda etype, fields: {**fields, "type": etype},
    st.sampled_from(TYPES) | st.text(max_size=12).filter(lambda t: t != "error"),
    st.dictionaries(KEYS, values, max_size=6),
)
error_events = st.builds(
    lambda nested, code, message: (
        {"type": "error", "error": {"code": code, "message": message}}
        if nested
        else {"type": "error", "error": message, "code": code}
    ),
    st.booleans(),
    st.text(max_size=20) | st.none(),
    values,
)
frames = st.lists(
    st.binary(max_size=32)
    | st.text(max_size=40)
    | values.map(json.dumps)
    | typed_events.map(json.dumps)
    | error_events.map(json.dumps),
    max_size=30,
)


class FrameFeed:
    """A transport that plays `session.created`, the frames, then a dropped connection."""

    def __init__(self, items: list[str | bytes]) -> None:
        self.items = [json.dumps(CREATED), *items]
        self.sent: list[bytes] = []

    async def send(self, data: bytes) -> None:
        self.sent.append(data)

    async def recv(self) -> str | bytes:
        await asyncio.sleep(0)
        if not self.items:
            raise TransportClosed(1006)
        return self.items.pop(0)

    async def close(self) -> None:
        self.items.clear()


async def play(items: list[str | bytes]) -> None:
    client = DuplexClientBase(model="m", heartbeat_interval_s=None)
    await client.open(FrameFeed(items))
    responses = client.responses()
    reason = await client.wait_closed(EXAMPLE_TIMEOUT_S)
    assert reason.startswith("disconnect")
    reader = client._driver.reader
    assert reader is not None
    await asyncio.wait_for(reader, EXAMPLE_TIMEOUT_S)
    assert reader.exception() is None
    expected = sum(1 for f in items if isinstance(f, str) and _is_error(f))
    assert len(client.errors) == expected  # every error event is reported
    drained = [h async for h in responses]  # the iterator ends with the session
    assert len(drained) <= len(items)
    await asyncio.wait_for(client.close(), EXAMPLE_TIMEOUT_S)


def _is_error(frame: str) -> bool:
    """Whether the frame is an error event the client can decode (strict JSON, an object)."""
    try:
        obj: Any = loads(frame)
    except CodecError:
        return False
    return obj.get("type") == "error"


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(frames)
def test_reader_survives_random_frames(items: list[str | bytes]) -> None:
    asyncio.run(asyncio.wait_for(play(items), EXAMPLE_TIMEOUT_S * 3))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames)
def test_schema_reads_any_object_into_a_canonical_event(items: list[str | bytes]) -> None:
    """The reader's decoding never raises, and what it keeps re-encodes to the same event."""
    beta_names = set(GA_TO_BETA.values())
    for frame in items:
        try:
            raw = loads(frame)
        except CodecError:
            continue
        event = parse_server_event(raw)
        wire = event.to_dict(beta=event.type in beta_names)
        assert parse_server_event(loads(dumps(wire))) == event
