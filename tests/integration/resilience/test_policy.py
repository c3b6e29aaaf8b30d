"""The reconnect policy and the resend outbox without sockets or waiting (injected sleep/random)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from duplex_client.client.resume import (
    ReconnectPolicy,
    ResumeFailed,
    resume_attempts,
)
from duplex_client.client.transport import TransportClosed
from duplex_client.protocol import client_events as ce
from duplex_client.protocol.errors import FATAL_RESUME_CODES, DuplexConnectionError
from duplex_client.protocol.session import Outbox


class FakeTransport:
    """Answers the first message with the given frames, then waits (or closes)."""

    def __init__(self, replies: list[dict[str, Any]], *, close_after: bool = False) -> None:
        self.replies = [json.dumps(r) for r in replies]
        self.close_after = close_after
        self.sent: list[dict[str, Any]] = []
        self.closed = False

    async def send(self, data: bytes) -> None:
        self.sent.append(json.loads(data))

    async def recv(self) -> str | bytes:
        if self.replies:
            return self.replies.pop(0)
        if self.close_after:
            raise TransportClosed(1006)
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def close(self) -> None:
        self.closed = True


RESUMED = {
    "type": "session.resumed",
    "session_id": "duplex-x",
    "resume_token": "rt_new",
    "attachment_generation": 2,
    "input": {"last_event_id": None, "audio_end_ms": 0, "append_count": 0},
}


def resume_event() -> ce.SessionResume:
    return ce.SessionResume(session_id="duplex-x", resume_token="rt_old")


def policy(slept: list[float], **kw: Any) -> ReconnectPolicy:
    async def sleep(s: float) -> None:
        slept.append(s)

    return ReconnectPolicy(uniform=lambda lo, hi: hi, sleep=sleep, **kw)


def error(code: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "code": code}}


def test_delays_grow_exponentially_within_the_protocol_bounds() -> None:
    p = ReconnectPolicy()
    assert [p.delay_bounds(a) for a in range(1, 7)] == [
        (0.25, 0.5),
        (0.25, 1.0),
        (0.25, 2.0),
        (0.25, 4.0),
        (0.25, 4.0),
        (0.25, 4.0),
    ]
    low = ReconnectPolicy(uniform=lambda lo, hi: lo)
    assert {low.delay(a) for a in range(1, 6)} == {0.25}
    with pytest.raises(ValueError):
        ReconnectPolicy(attempts=0)
    with pytest.raises(ValueError):
        ReconnectPolicy(min_delay_s=5.0, max_delay_s=4.0)


async def test_failed_connects_move_to_the_next_attempt() -> None:
    slept: list[float] = []
    transports = [FakeTransport([RESUMED])]
    calls = 0

    async def connect() -> FakeTransport:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise DuplexConnectionError("connection refused")
        return transports[0]

    got = await resume_attempts(policy(slept), connect, resume_event)
    assert got.attempt == 3 and got.event.resume_token == "rt_new"
    assert slept == [0.5, 1.0, 2.0]
    assert transports[0].sent == [resume_event().to_dict() | {"event_id": got_id(transports[0])}]


def got_id(transport: FakeTransport) -> str:
    return str(transport.sent[0]["event_id"])


@pytest.mark.parametrize("code", sorted(FATAL_RESUME_CODES))
async def test_fatal_resume_codes_stop_at_once(code: str) -> None:
    slept: list[float] = []
    made: list[FakeTransport] = []

    async def connect() -> FakeTransport:
        made.append(FakeTransport([error(code)]))
        return made[-1]

    with pytest.raises(ResumeFailed) as caught:
        await resume_attempts(policy(slept), connect, resume_event)
    assert caught.value.code == code and caught.value.attempts == 1
    assert len(made) == 1 and made[0].closed and code in str(caught.value)


async def test_other_failures_retry_until_the_attempts_run_out() -> None:
    slept: list[float] = []
    made: list[FakeTransport] = []
    script = [
        FakeTransport([error("resource_exhausted")]),
        FakeTransport([], close_after=True),
        FakeTransport([]),  # never answers: the resume timeout
    ]

    async def connect() -> FakeTransport:
        made.append(script[len(made)])
        return made[-1]

    p = policy(slept, attempts=3, resume_timeout_s=0.05)
    with pytest.raises(ResumeFailed) as caught:
        await resume_attempts(p, connect, resume_event)
    assert caught.value.code is None and caught.value.attempts == 3
    assert "gave up after 3 attempt(s): no session.resumed within 0.05 s" in str(caught.value)
    assert all(t.closed for t in made) and len(slept) == 3


def fill(box: Outbox, *ids: str, wire: int | None = 1) -> None:
    for event_id in ids:
        entry = box.add(event_id, "append", b"x" * 10)
        entry.wire = wire


def held(box: Outbox) -> list[str]:
    out, n = [], 0
    while (entry := box.entry_from(n)) is not None:
        out.append(entry.event_id)
        n = entry.n + 1
    return out


def test_outbox_places_the_servers_view_and_keeps_the_rest_in_order() -> None:
    box = Outbox()
    fill(box, "a", "b", "c", "d")
    assert box.pending_after("b") and held(box) == ["c", "d"]
    assert box.pending_after("b")  # the horizon: everything held is after it
    assert not box.pending_after("zz")  # unknown id: the client cannot tell
    assert not box.pending_after(None)  # the server claims nothing, yet b was confirmed


def test_outbox_from_the_start_and_after_an_acknowledged_commit() -> None:
    box = Outbox()
    fill(box, "a", "b")
    assert box.pending_after(None) and held(box) == ["a", "b"]
    box.add("c", "commit", b"{}").wire = 1
    fill(box, "d")
    assert box.confirm("c") and held(box) == ["d"]
    assert box.pending_after("c") and held(box) == ["d"]
    box.discard("d")  # rejected by the server: never resent
    assert held(box) == []


def test_outbox_bounds_forget_only_what_was_written() -> None:
    box = Outbox(max_entries=3)
    fill(box, "q1", "q2", "q3", "q4", wire=None)  # queued while disconnected: all kept
    assert held(box) == ["q1", "q2", "q3", "q4"] and box.unsent_bytes == 40
    box = Outbox(max_entries=3)
    fill(box, "a", "b", "c", "d")
    assert held(box) == ["b", "c", "d"]
    assert box.pending_after("a")  # the forgotten newest is the horizon
    assert not box.pending_after(None)
    fill(box, "e", wire=None)
    assert held(box) == ["c", "d", "e"]  # b made room
    assert box.drop_written() == 2 and held(box) == ["e"]


def test_outbox_a_unit_decision_confirms_the_append_that_closed_it() -> None:
    box = Outbox()
    for event_id, unit in [("a", None), ("b", 0), ("c", None), ("d", 1), ("e", 2)]:
        box.add(event_id, "append", b"x" * 10, unit=unit).wire = 1
    box.add("f", "append", b"x" * 10, unit=3)  # not written yet: no decision can cover it
    assert box.confirm_unit(1) and held(box) == ["e", "f"]
    assert not box.confirm_unit(1) and not box.confirm_unit(0)  # old news
    assert not box.confirm_unit(3) and held(box) == ["e", "f"]
    assert box.pending_after("d") and held(box) == ["e", "f"]  # d is the horizon
    assert not box.confirm_unit(7) and held(box) == ["e", "f"]  # no such append held


def test_outbox_a_server_commit_voids_unit_numbers_sent_past_it() -> None:
    """Sealed at 5600 ms; the client, not knowing, had closed its unit 6 at 6400 ms."""
    box = Outbox()
    for event_id, unit, end in [
        ("a", 5, 5400),
        ("b", None, 5600),
        ("c", None, 6000),
        ("d", 6, 6400),
    ]:
        box.add(event_id, "append", b"x" * 10, unit=unit, audio_end_ms=end).wire = 1
    box.server_committed(5600)
    # the server's unit 6 is the residual that ends at 5600: b, not d
    assert not box.confirm_unit(6) and held(box) == ["a", "b", "c", "d"]
    box.add("e", "append", b"x" * 10, unit=8, audio_end_ms=7600).wire = 1  # renumbered
    assert box.confirm_unit(8) and held(box) == []
