"""How a run's input ends: the commit and its answer awaited, or a continuous stream drained."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from duplex_client.client.streaming import StreamResult
from duplex_client.framing.units import UnitGrid
from duplex_client.run.options import DEFAULT_CHUNK_MS
from duplex_client.run.watch import finish_stream, settle_turn

if TYPE_CHECKING:
    from duplex_client.run.session_run.session import SessionRun


async def finish_turn(run: SessionRun, sr: StreamResult) -> None:
    """Wait for the commit, the post-commit decision when one is due, and drain responses.

    Woken by the session's events (`settle_turn`), never by polling.
    """
    client, opts = run.client, run.options
    if sr.commit_event_id is None:
        if not client.takes_commits:
            await end_stream(run)
        return
    # From the send (the run's clock is monotonic): a decision may arrive before `stream`
    # returns, since the timeline is written off the loop.
    sent = sr.commit_sent_at
    run.commit_at = sent if sent is not None else time.monotonic()
    committed = await client.wait_committed(sr.commit_event_id, timeout=opts.timeout_s)
    # the manual lane (qwen3-turn, push-to-talk) asks for its answer; server VAD does not
    config = client.config
    manual = opts.manual_commit or not (config.auto_response or config.turn_detection)
    if manual:
        await client.create_response()
    rate = client.input_pcm_format.sample_rate_hz
    grid = UnitGrid.from_capabilities(client.capabilities, sample_rate_hz=rate)
    samples = client.audio_samples
    residual = samples > grid.start_samples(grid.unit_at_sample(samples))
    active = client.tracker.active
    due = residual or manual or committed.no_response or active is not None
    deadline = time.monotonic() + opts.timeout_s
    settled = await settle_turn(
        client,
        run.activity,
        since=run.commit_at,
        due=due,
        settle_s=opts.settle_s,
        deadline=deadline,
        timeout_s=opts.timeout_s,
    )
    if settled:  # what is still playing is heard to its end (the acks say so) first
        await run.listening.drain(max(0.0, deadline - time.monotonic()))


async def end_stream(run: SessionRun) -> None:
    """No commit ends the input: a continuous stream drains at its close; hear it out."""
    opts = run.options
    left = await finish_stream(
        run.client, run.activity, settle_s=opts.settle_s, timeout_s=opts.timeout_s
    )
    end = run.client.stream_end
    if end is not None and not end.drained:
        said = f"{end.status} ({end.reason})" if end.status else "no response"
        run.progress.warn(f"the continuous stream did not drain at session.close: {said}")
    if left is not None:
        await run.listening.drain(left)


def note_chunk(run: SessionRun) -> None:
    """Say so when the server's units are shorter than `chunk_ms` (appends were cut)."""
    asked, used = run.timeline.chunk_ms_requested, run.timeline.chunk_ms
    # the default (200 ms) cut to a shorter grid's units (80 ms) is expected: no note
    if asked is not None and used is not None and asked != DEFAULT_CHUNK_MS:
        message = (
            f"chunk_ms {asked} is longer than the server's units: appends were cut at "
            f"{used} ms (input_timeline.json records chunk_ms {used})"
        )
        run.progress.warn(message)
