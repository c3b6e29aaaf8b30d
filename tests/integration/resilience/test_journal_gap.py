"""A resume into a journal gap, over real sockets against the reference server (issue #29).

vLLM-Omni 0.30.0 answers such a resume with `session.resync_required {reason: "journal_gap"}`
and ends the socket without attaching. The SDK then ends the session, or (the run's policy)
opens a new one and carries on in it, and every record names both sessions and the gap.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from duplex_client import DuplexClient
from duplex_client.framing.invariants import check_timeline
from duplex_client.framing.timeline import InputTimeline
from duplex_client.protocol import ConnectionNewSession, SessionCreated
from duplex_client.run.stream import stream_clip
from duplex_client.server import Limits, ReferenceServer
from tests.integration.live.helpers import write_wav
from tests.integration.resilience.proxy import FaultyProxy
from tests.integration.resilience.test_reconnect import ANSWERS, fast, tone_pcm

#: Events the detached session sends are forgotten after 50 ms; the client comes back later.
#: Two sessions: the lost one keeps its slot through its disconnect grace, as upstream's.
FORGETFUL = Limits(journal_retention_s=0.05, max_sessions=2)


async def _cut_while_answering(proxy: FaultyProxy, client: DuplexClient) -> None:
    """Cut the socket once the answer is streaming, so the session keeps sending detached."""
    async with asyncio.timeout(10):
        while not any(h.audio_ms for h in client.tracker.handles.values()):
            await asyncio.sleep(0.01)
    proxy.cut()


async def test_a_gap_opens_a_new_session_and_the_record_names_both() -> None:
    server = ReferenceServer(profile="minicpmo", script=ANSWERS, limits=FORGETFUL)
    async with server, FaultyProxy(server.port) as proxy:
        policy = fast(min_delay_s=0.4, base_delay_s=0.4, new_session_on_resync=True)
        client = DuplexClient(proxy.url, reconnect=policy)
        seen: list[object] = []
        client.add_listener(lambda event, _at: seen.append(event))
        await client.connect()
        first_id = client.session_id
        timeline = InputTimeline()
        cut = asyncio.ensure_future(_cut_while_answering(proxy, client))
        result = await client.stream(tone_pcm(3.0), timeline=timeline)
        await cut
        assert result.commit_event_id is not None
        await client.wait_committed(result.commit_event_id, timeout=10)
        await client.close()
        ids = server.session_ids()
        rows_new = server.appends(client.session_id)
    (report,) = client.reconnects
    assert report.outcome == "new_session"
    assert report.previous_session_id == first_id != client.session_id
    assert client.session_ids == [first_id, client.session_id]
    assert client.closed_reason == "client_close"
    assert ids == [first_id]  # the lost one waits out its grace; the new one is closed
    # the synthetic marker comes first, then the new session's own `session.created`
    at = next(i for i, e in enumerate(seen) if isinstance(e, ConnectionNewSession))
    marker = seen[at]
    assert isinstance(marker, ConnectionNewSession)
    assert isinstance(seen[at + 1], SessionCreated)
    assert (marker.previous_session_id, marker.session_id) == (first_id, client.session_id)
    # the timeline says where the gap is and which appends went to the new session
    (gap,) = timeline.to_dict()["new_sessions"]
    assert (gap["previous_session_id"], gap["session_id"]) == (first_id, client.session_id)
    assert gap["audio_start_ms"] == marker.audio_start_ms
    assert gap["lost_appends"] == marker.lost_appends == report.unresolved
    (row,) = timeline.reconnects
    assert row["outcome"] == "new_session" and row["new_session_id"] == client.session_id
    # the new session got the tail of the run's appends, in order, none twice
    sent = [r["event_id"] for r in timeline.appends]
    got = [r["event_id"] for r in rows_new]
    assert got and got == sent[len(sent) - len(got) :]
    assert check_timeline(timeline.to_dict()) == []


async def test_a_full_server_is_tried_again_then_the_gap_ends_the_session() -> None:
    """One slot: the lost session holds it through its grace, so no new one can open."""
    limits = Limits(journal_retention_s=0.05, max_sessions=1)
    server = ReferenceServer(profile="minicpmo", script=ANSWERS, limits=limits)
    async with server, FaultyProxy(server.port) as proxy:
        policy = fast(min_delay_s=0.4, base_delay_s=0.4, attempts=2, new_session_on_resync=True)
        client = DuplexClient(proxy.url, reconnect=policy)
        await client.connect()
        cut = asyncio.ensure_future(_cut_while_answering(proxy, client))
        await client.append_input(tone_pcm(2.0))
        await cut
        reason = await client.wait_closed(10)
        await client.close()
    assert "resync_required: journal_gap" in reason and "resource_exhausted" in reason
    (report,) = client.reconnects
    assert report.outcome == "resync_required"
    assert proxy.connections == 4  # the session, its resume, two tries at a new one


async def test_without_the_policy_a_gap_ends_the_session_saying_so() -> None:
    server = ReferenceServer(profile="minicpmo", script=ANSWERS, limits=FORGETFUL)
    async with server, FaultyProxy(server.port) as proxy:
        client = DuplexClient(proxy.url, reconnect=fast(min_delay_s=0.4, base_delay_s=0.4))
        await client.connect()
        cut = asyncio.ensure_future(_cut_while_answering(proxy, client))
        await client.append_input(tone_pcm(2.0))
        await cut
        reason = await client.wait_closed(10)
        await client.close()
    assert "resync_required: journal_gap" in reason
    (report,) = client.reconnects
    assert report.outcome == "resync_required" and report.attempts == 1
    assert client.session_ids == [client.session_id]


async def test_a_run_records_both_sessions_and_the_gap(tmp_path: Path) -> None:
    """`stream` (the run layer, reconnecting by default) carries on in a new session."""
    wav = write_wav(tmp_path / "in.wav", tone_pcm(3.0))
    server = ReferenceServer(profile="minicpmo", script=ANSWERS, limits=FORGETFUL)
    async with server, FaultyProxy(server.port) as proxy:

        async def cut_when_answering() -> None:
            async with asyncio.timeout(10):
                while not server.session_ids() or server.session().conversation.active is None:
                    await asyncio.sleep(0.01)
            proxy.cut()

        cut = asyncio.ensure_future(cut_when_answering())
        result = await stream_clip(
            proxy.url, input_audio=str(wav), output_dir=tmp_path / "run", tail_silence_s=0.2
        )
        await cut
    run = tmp_path / "run"
    first, second = result.session_ids
    assert first != second and result.session_id == second
    assert json.loads((run / "result.json").read_text())["session_ids"] == [first, second]
    assert json.loads((run / "session.json").read_text())["session_ids"] == [first, second]
    timeline = json.loads((run / "input_timeline.json").read_text())
    (gap,) = timeline["new_sessions"]
    assert (gap["previous_session_id"], gap["session_id"]) == (first, second)
    assert [r["outcome"] for r in timeline["reconnects"]] == ["new_session"]
    assert any(f"continued in new session {second}" in w for w in result.warnings)
    lines = (run / "events.jsonl").read_text().splitlines()
    marker = next(json.loads(x) for x in lines if '"connection.new_session"' in x)
    assert marker["event"]["previous_session_id"] == first
