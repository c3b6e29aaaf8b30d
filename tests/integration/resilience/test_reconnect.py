"""Reconnect and resume over real WebSockets on 127.0.0.1: resends, late sends, stops, close."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from duplex_client import DuplexClient, DuplexSessionClosedError
from duplex_client.client.resume import ReconnectPolicy
from duplex_client.framing.timeline import InputTimeline
from duplex_client.protocol import ConnectionResumed, SessionResumed
from duplex_client.server import Faults, ReferenceServer
from duplex_client.server.engine.script import Script
from tests.integration.resilience.proxy import FaultyProxy
from tests.support.scripted_server import Peer, ScriptedServer

ANSWERS = Script.from_dict(
    {
        "rules": [{"on": "unit", "index": 1, "do": "speak", "audio_ms": 2000, "text": "hi"}],
        "defaults": {"unit": {"do": "listen"}, "commit": {"do": "listen"}},
        "chunk_ms": 500,
        "chunk_interval_ms": 100,
    }
)


def fast(**kw: Any) -> ReconnectPolicy:
    """Short backoff so tests do not wait (delays stay jittered)."""
    return ReconnectPolicy(**{"base_delay_s": 0.02, "min_delay_s": 0.01, **kw})


def tone_pcm(seconds: float) -> bytes:
    t = np.arange(int(16000 * seconds)) / 16000
    return (np.sin(2 * np.pi * 440 * t) * 8000).astype(np.int16).tobytes()


async def wait_for(pred: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not pred():
            await asyncio.sleep(0.01)


def assert_same_appends(server_rows: list[dict[str, Any]], timeline: InputTimeline) -> None:
    """The server's accepted appends are the timeline's rows: no gap, no duplicate."""
    rows = timeline.appends
    assert [r["event_id"] for r in server_rows] == [r["event_id"] for r in rows]
    assert [r["audio_end_ms"] for r in server_rows] == [r["audio_end_ms"] for r in rows]


async def test_three_drops_are_resumed_and_every_event_arrives_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    faults = Faults(drop_after_events=4, drop_times=3)
    async with ReferenceServer(profile="minicpmo", faults=faults, script=ANSWERS) as server:
        client = DuplexClient(server.url, reconnect=fast())
        seen: list[Any] = []
        client.add_listener(lambda event, _at: seen.append(event))
        await client.connect()
        first_token = client.connection.attachment.token
        timeline = InputTimeline()
        result = await client.stream(tone_pcm(3.0), timeline=timeline, realtime=False)
        assert result.commit_event_id is not None
        await client.wait_committed(result.commit_event_id, timeout=10)
        await wait_for(lambda: len(client.reconnects) == 3 and client.connected)
        await wait_for(lambda: any(h.done for h in client.tracker.handles.values()))
        tokens = (first_token, client.connection.attachment.token)
        await client.close()
        assert client.closed_reason == "client_close"
        assert_same_appends(server.appends(), timeline)
    assert [r.outcome for r in client.reconnects] == ["resumed"] * 3
    assert client.attachment_generation == 4
    assert tokens[0] != tokens[1]  # rotated at every resume
    seqs = [e.server_event_seq for e in seen if e.server_event_seq is not None]
    assert seqs == list(range(1, len(seqs) + 1))  # replayed duplicates never surface
    kinds = [type(e) for e in seen]
    for at in [i for i, k in enumerate(kinds) if k is ConnectionResumed]:
        assert kinds[at + 1] is SessionResumed
    assert [row["outcome"] for row in timeline.reconnects] == ["resumed"] * 3
    logged = caplog.text
    assert all(t and t not in logged for t in tokens)


async def test_appends_lost_in_flight_are_resent_with_their_ids_and_marked() -> None:
    server = ReferenceServer(profile="minicpmo", script=ANSWERS)
    async with server, FaultyProxy(server.port) as proxy:
        policy = fast(min_delay_s=0.35, base_delay_s=0.35)  # long enough to queue one
        client = DuplexClient(proxy.url, reconnect=policy)
        await client.connect()
        timeline = InputTimeline()
        #: When the blackhole began and the cut came (monotonic): the stream's own clock may
        #: start a little after `trouble` does on a loaded machine, so offsets are taken here.
        stamps: dict[str, float] = {}

        async def trouble() -> None:
            await asyncio.sleep(0.5)
            proxy.blackhole = True  # appends at about 0.6 and 0.8 s never reach the server
            stamps["blackhole"] = time.monotonic()
            await asyncio.sleep(0.4)
            proxy.cut()
            stamps["cut"] = time.monotonic()
            proxy.blackhole = False

        task = asyncio.ensure_future(trouble())
        result = await client.stream(tone_pcm(2.0), timeline=timeline)
        await task
        blackhole_ms, cut_ms = ((stamps[k] - result.clock.t0) * 1000 for k in ("blackhole", "cut"))
        assert result.commit_event_id is not None
        await client.wait_committed(result.commit_event_id, timeout=10)
        await client.close()
        server_rows = server.appends()
    assert proxy.swallowed > 0 and proxy.connections == 2
    assert_same_appends(server_rows, timeline)
    (report,) = client.reconnects
    resent = [r for r in timeline.appends if r["resends"]]
    assert report.outcome == "resumed" and len(resent) == report.resent_appends >= 1
    # sent inside the blackhole (offsets are recorded to the ms)
    assert all(blackhole_ms - 1 <= r["sent_offset_ms"] <= cut_ms + 1 for r in resent), (
        blackhole_ms, cut_ms, [r["sent_offset_ms"] for r in resent]
    )  # fmt: skip
    (row,) = timeline.reconnects
    assert row["resent_appends"] == len(resent) and row["attempts"] == report.attempts
    assert all(r["resends"][0]["sent_offset_ms"] >= row["resumed_offset_ms"] for r in resent)
    # due between the cut and the resume: sent late, once resumed (an append a loaded CI
    # machine made late before the outage is not what this is about)
    late = [
        r
        for r in timeline.appends
        if r["lateness_ms"] > 100 and cut_ms <= r["scheduled_offset_ms"] < row["resumed_offset_ms"]
    ]
    assert late, "an append due during the outage is sent late, on its original deadline"
    assert all(r["sent_offset_ms"] >= row["resumed_offset_ms"] for r in late)
    assert all(r["scheduled_offset_ms"] == r["media_end_ms"] for r in timeline.appends)
    offsets = [r["sent_offset_ms"] for r in timeline.appends]
    assert offsets == sorted(offsets)


async def test_without_reconnect_a_drop_ends_the_client() -> None:
    async with ReferenceServer(profile="minicpmo", faults=Faults(drop_after_events=3)) as server:
        client = DuplexClient(server.url, reconnect=False)
        await client.connect()
        with pytest.raises(DuplexSessionClosedError):
            for _ in range(40):
                await client.append_input(tone_pcm(0.2))
                await asyncio.sleep(0.05)
        assert (await client.wait_closed(5)).startswith("disconnect")
        await client.close()
    assert client.reconnects == []


class Resumer:
    """Scripted answers to `session.resume`: an error code, or `session.resumed` (+ extra)."""

    def __init__(self, server: ScriptedServer) -> None:
        self.server = server
        self.error: str | None = None
        self.input: dict[str, Any] | None = None
        self.then: list[dict[str, Any]] = []
        server.on("session.resume", self.answer)

    async def answer(self, peer: Peer, event: dict[str, Any]) -> None:
        if self.error is not None:
            err = {"type": "invalid_request_error", "code": self.error, "message": "no"}
            await peer.send({"type": "error", "error": err}, seq=False)
            await peer.conn.close(1008)
            return
        resumed: dict[str, Any] = {
            "type": "session.resumed",
            "session_id": event["session_id"],
            "resume_token": "rt_rotated",
            "attachment_generation": 2,
            "session": {},
        }
        if self.input is not None:
            resumed["input"] = self.input
        await peer.send(resumed, seq=False)
        for extra in self.then:
            await peer.send(extra, seq=False)


def drop(peer: Peer) -> None:
    peer.conn.transport.abort()


async def test_a_fatal_resume_code_ends_the_session_at_once() -> None:
    async with ScriptedServer() as server:
        resumer = Resumer(server)
        resumer.error = "invalid_resume_token"
        client = DuplexClient(server.url, reconnect=fast())
        await client.connect()
        drop(server.peer)
        reason = await client.wait_closed(5)
        assert "invalid_resume_token" in reason and reason.startswith("disconnect")
        assert len(server.peers) == 2  # one attempt, no more
        (report,) = client.reconnects
        assert report.outcome == "failed" and report.attempts == 1
        with pytest.raises(DuplexSessionClosedError):
            await client.append_input(tone_pcm(0.2))
        await client.close()


async def test_resync_required_clears_the_token_so_the_next_drop_ends_it() -> None:
    async with ScriptedServer() as server:
        resumer = Resumer(server)
        resumer.input = {"last_event_id": None, "audio_end_ms": 0, "append_count": 0}
        resumer.then = [{"type": "session.resync_required", "reason": "journal_gap"}]
        client = DuplexClient(server.url, reconnect=fast())
        outcomes: list[str | None] = []
        client.add_reconnect_listener(lambda report: outcomes.append(report.outcome))
        await client.connect()
        drop(server.peer)
        await wait_for(lambda: outcomes[-1:] == ["resync_required"])
        assert outcomes == ["resumed", "resync_required"]
        drop(server.peer)
        assert (await client.wait_closed(5)).startswith("disconnect")
        assert len(server.peers) == 2
        await client.close()


async def test_resumed_without_input_resends_nothing_but_sends_what_was_queued() -> None:
    gate = asyncio.Event()

    async def gated_sleep(_s: float) -> None:
        await gate.wait()

    async with ScriptedServer() as server:
        Resumer(server)  # answers without `input`
        client = DuplexClient(server.url, reconnect=ReconnectPolicy(sleep=gated_sleep))
        await client.connect()
        written = await client.append_input(tone_pcm(0.2))
        await wait_for(lambda: bool(server.peer.of_type("input_audio_buffer.append")))
        drop(server.peer)
        await wait_for(lambda: not client.connected)
        queued = await client.append_input(tone_pcm(0.2))  # returns at once, clock untouched
        commit = await client.commit()
        gate.set()
        await wait_for(lambda: len(server.peers) == 2 and client.connected)
        await wait_for(lambda: bool(server.peer.of_type("input_audio_buffer.commit")))
        second = server.peer
        ids = [m.get("event_id") for m in second.received if m["type"].startswith("input_audio")]
        assert ids == [queued, commit] and written not in ids
        (report,) = client.reconnects
        assert report.unresolved == 1 and report.resent_appends == 0
        assert [d.event_id for d in report.deliveries] == [queued, commit]
        assert second.received[0]["type"] == "session.resume"
        assert second.received[0]["resume_token"] == "rt_secret"
        await client.close()


async def test_close_during_a_reconnect_waits_for_the_resume_then_closes() -> None:
    gate = asyncio.Event()

    async def gated_sleep(_s: float) -> None:
        await gate.wait()

    async with ScriptedServer() as server:
        Resumer(server).input = {"last_event_id": None, "audio_end_ms": 0, "append_count": 0}
        client = DuplexClient(server.url, reconnect=ReconnectPolicy(sleep=gated_sleep))
        await client.connect()
        drop(server.peer)
        await wait_for(lambda: not client.connected)
        closing = asyncio.ensure_future(client.close())
        await asyncio.sleep(0.1)
        assert not closing.done()
        gate.set()
        await asyncio.wait_for(closing, 5)
        assert client.closed_reason == "client_close"
        assert [m["type"] for m in server.peer.received] == ["session.resume", "session.close"]


async def test_an_unreachable_server_ends_the_session_after_the_attempts() -> None:
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    server = ScriptedServer()
    await server.__aenter__()
    client = DuplexClient(server.url, reconnect=ReconnectPolicy(attempts=3, sleep=sleep))
    await client.connect()
    commit = await client.commit()
    await server.__aexit__(None, None, None)  # the server is gone for good
    reason = await client.wait_closed(10)
    assert "gave up after 3 attempt(s)" in reason and "connection refused" in reason
    assert len(slept) == 3 and all(0.25 <= s <= 4.0 for s in slept)
    with pytest.raises(DuplexSessionClosedError):
        await client.wait_committed(commit, timeout=1)
    await client.close()


async def test_unit_decisions_release_the_outbox_and_a_later_drop_still_resumes() -> None:
    server = ReferenceServer(profile="minicpmo", script=ANSWERS)
    async with server, FaultyProxy(server.port) as proxy:
        client = DuplexClient(proxy.url, reconnect=fast())
        decided: list[int] = []
        client.add_listener(
            lambda e, _at: decided.append(e.unit_index) if e.type == "response.listen" else None
        )
        await client.connect()
        timeline = InputTimeline()
        await client.stream(tone_pcm(5.0), timeline=timeline, realtime=False, commit=False)
        await wait_for(lambda: 4 in decided)
        # Every append closed a unit the server has decided on: nothing is kept for resending,
        # where only acknowledged commits would have kept all 25 appends.
        assert len(timeline.appends) == 25 and len(client.connection.outbox) == 0
        proxy.cut()
        await wait_for(lambda: len(client.reconnects) == 1 and client.connected)
        result = await client.stream(tone_pcm(2.0), timeline=timeline, realtime=False)
        assert result.commit_event_id is not None
        await client.wait_committed(result.commit_event_id, timeout=10)
        await client.close()
        server_rows = server.appends()
    assert client.reconnects[0].outcome == "resumed"
    assert_same_appends(server_rows, timeline)
