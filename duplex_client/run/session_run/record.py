"""A run's last steps, through a cancel: close, judge, measure, write the bundle's last files."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from duplex_client.framing.timeline.document import render_document
from duplex_client.run.result import (
    RunResult,
    judge,
    judge_timing,
    record_listening,
    record_session,
)
from duplex_client.run.tools import function_call_turns, merge_turns

if TYPE_CHECKING:
    from duplex_client.run.session_run.session import SessionRun


async def finish_regardless(work: Awaitable[None]) -> None:
    """Run `work` to its end even when this task is cancelled meanwhile; a cancel that came
    is raised once it is done (the work's own failure is raised as it is)."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while True:
        try:
            await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


def _dropped(reason: str | None) -> bool:
    """Whether a session ended because its socket dropped."""
    return reason is not None and reason.startswith("disconnect")


async def finish(run: SessionRun, result: RunResult, started: float) -> None:
    """Close, judge, measure and write the last files of the bundle."""
    await close(run)
    complete(run, result, started)
    await measure(run, result)
    result.warnings = list(run.progress.warnings)  # media, model, listening notes
    # fsync'd file writes: off the loop, where other sessions may be pacing
    await asyncio.to_thread(write_final, run, result.to_dict())


def write_final(run: SessionRun, doc: dict[str, Any]) -> None:
    """The last files: session.json (final attachment generation), then result.json."""
    if run.client.session_id is not None:
        with contextlib.suppress(OSError):
            run.bundle.write_session(
                run.client, url=run.client.url, input_facts=run.source.input_facts
            )
    run.bundle.finish(doc)


async def measure(run: SessionRun, result: RunResult) -> None:
    """Heard files, turns and metrics; a failure here is reported, never lost silently."""
    try:
        await record_listening(result, run.client, run.timeline, run.listening, run.progress.warn)
    except Exception as exc:  # the record of the run must still be written
        result.listening_error = f"{type(exc).__name__}: {exc}"
        run.progress.warn(f"turn metrics not measured: {result.listening_error}")
    records = run.client.function_call_records
    result.function_calls = [r.to_dict() for r in records]
    if result.turns is not None:
        result.turns = merge_turns(result.turns, function_call_turns(records, run.clock))


async def close(run: SessionRun) -> None:
    """Stop the payloads, the listener and the client; write the timeline off the loop."""
    if run.keeper is not None:
        run.keeper.close()
    await run.listening.stop()
    with contextlib.suppress(Exception):
        await asyncio.shield(run.client.close())
    # Acks and errors heard since the stream's own write: the document taken here (the session
    # is closed, nothing changes it now), encoded and written off the loop (with the
    # thumbnails still queued), where other sessions may be pacing.
    doc = run.timeline.to_dict()
    await asyncio.shield(asyncio.to_thread(write_timeline, run, doc))
    if run.thumbnails is not None:
        for warning in run.thumbnails.warnings:
            run.progress.warn(warning)


def write_timeline(run: SessionRun, doc: dict[str, Any]) -> None:
    """`input_timeline.json` of the document taken, then the queued thumbnails written out."""
    with contextlib.suppress(Exception):
        run.timeline.write(text=render_document(doc))
    if run.thumbnails is not None:
        run.thumbnails.close()


def complete(run: SessionRun, result: RunResult, started: float) -> None:
    """What the session was, and the judgement of its result."""
    client = run.client
    record_session(result, client, run.timeline, run.bundle, started)
    run.source.complete(result)
    if run.timing is not None:
        judge_timing(result, run.timeline, run.options.max_lateness_ms)
    judge(
        result,
        client,
        # a dialect has no decisions: silence is its listen (docs/dialects.md)
        need_decision=run.source.needs_decision and client.dialect == "duplex",
        benign=run.source.benign_errors,
    )
    if result.error and not run.options.reconnect and _dropped(client.closed_reason):
        result.error += " (the connection dropped and reconnection is off: --no-reconnect)"
