"""Send a recorded input again: the same appends and commits, on the same media clock.

Nothing is re-planned: each append goes out with its recorded PCM, frames, media span, unit
index and `is_speech`, when its audio would have been captured (its media end), as the
original stream released it; the commits follow the appends they followed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from duplex_client.client.streaming import (
    StreamResult,
    StreamTarget,
    _sleep_until,
    attach_timeline,
    send_append,
)
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.plan import FramingReport, PlannedAppend, StreamPosition
from duplex_client.framing.recorded import RecordedInput
from duplex_client.framing.timeline import InputTimeline
from duplex_client.framing.units import UnitGrid


async def send_recorded(
    target: StreamTarget,
    recorded: RecordedInput,
    *,
    clock: MediaClock,
    timeline: InputTimeline | None = None,
    describe: dict[str, Any] | None = None,
    on_sent: Callable[[PlannedAppend], None] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> StreamResult:
    """Send every recorded append and commit, realtime-paced; returns what was sent.

    `describe` holds the recorded stream's facts for the new timeline (`chunk_ms`,
    `audio_source`, `video`, `soundtrack_policy`, `tail_silence_ms`, `media_origin_ms`).
    """
    facts = describe or {}
    if timeline is not None:
        _bind(timeline, target, clock, recorded, facts)
    clock.start(int(facts.get("media_origin_ms") or 0))
    ids: list[str] = []
    commit_id: str | None = None
    commit_sent_at: float | None = None
    commits = {c.after_append_index: c for c in recorded.commits}
    end_ms = 0
    for index, append in enumerate(recorded.appends):
        if clock.realtime:
            await _sleep_until(clock, append.media_end_ms, sleep)
        ids.append(await send_append(target, append, clock, timeline, on_sent))
        end_ms = append.media_end_ms
        commit = commits.get(index)
        if commit is not None:
            commit_sent_at = clock.now()
            commit_id = await target.commit(
                final=commit.final, create_response=commit.response_create
            )
            if timeline is not None:
                timeline.add_commit(
                    commit_id,
                    clock.timing(end_ms, commit_sent_at),
                    final=commit.final,
                    response_create=commit.response_create,
                )
    if timeline is not None and timeline.path is not None:
        await asyncio.to_thread(timeline.write, text=timeline.render())
    last = recorded.appends[-1] if recorded.appends else None
    position = StreamPosition(
        media_ms=end_ms, audio_samples=last.audio_end_samples if last is not None else 0
    )
    return StreamResult(
        position, clock, FramingReport(), tuple(ids), commit_id, end_ms, commit_sent_at
    )


def _bind(
    timeline: InputTimeline,
    target: StreamTarget,
    clock: MediaClock,
    recorded: RecordedInput,
    facts: dict[str, Any],
) -> None:
    attach_timeline(timeline, target, clock)
    grid = UnitGrid(first_unit_ms=recorded.first_unit_ms, chunk_period_ms=recorded.chunk_period_ms)
    timeline.set_unit_grid(grid, target.capabilities)
    timeline.describe_stream(
        chunk_ms=int(facts.get("chunk_ms") or 200),
        media_origin_ms=int(facts.get("media_origin_ms") or 0),
        tail_silence_ms=int(facts.get("tail_silence_ms") or 0),
        audio_source=facts.get("audio_source"),
        video=facts.get("video"),
        soundtrack=facts.get("soundtrack_policy"),
        pacing=clock.pacing,
    )
