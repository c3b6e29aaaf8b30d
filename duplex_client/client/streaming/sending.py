"""Sending planned appends on the media clock: one append, the deadline wait, the whole plan."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from duplex_client.client.prefetch import PlanPrefetcher
from duplex_client.client.streaming.targets import StreamTarget, _TakesImages
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.plan import PlannedAppend
from duplex_client.framing.timeline import InputTimeline

#: Deadlines are met to within this much (guards against float residue in sleep loops).
_DEADLINE_SLACK_S = 1e-6


async def append_planned(target: StreamTarget, append: PlannedAppend) -> str:
    """Send one planned append (PCM, frames and labels); returns its event id.

    A session that takes images as items (a turn-based model with `supports_image_input`)
    gets the append's base frame as an `input_image` item first, and the append without it.
    """
    frames = append.video_frames
    # the capability before the runtime Protocol check, which costs tens of µs per call
    caps = getattr(target, "capabilities", None) if frames else None
    if caps is not None and caps.supports_image_input and isinstance(target, _TakesImages):
        await target.send_image_item(frames[0])
        frames = ()
    return await target.append_input(
        append.pcm or None,
        video_frames=frames,
        is_speech=append.is_speech,
        media_start_ms=append.media_start_ms,
        media_end_ms=append.media_end_ms,
        unit_index=append.unit_index,
    )


async def send_append(
    target: StreamTarget,
    append: PlannedAppend,
    clock: MediaClock,
    timeline: InputTimeline | None,
    on_sent: Callable[[PlannedAppend], None] | None,
) -> str:
    """Send one append now, record it (due at its media end) and tell `on_sent`."""
    sent_at = clock.now()
    event_id = await append_planned(target, append)
    if timeline is not None:
        timeline.add_append(append, event_id, clock.timing(append.media_end_ms, sent_at))
    if on_sent is not None:
        on_sent(append)
    return event_id


async def _sleep_until(
    clock: MediaClock, media_ms: float, sleep: Callable[[float], Awaitable[None]]
) -> None:
    while (wait := clock.wait_s(media_ms)) > _DEADLINE_SLACK_S:
        await sleep(wait)


async def _send_planned(
    prefetch: PlanPrefetcher,
    target: StreamTarget,
    clock: MediaClock,
    timeline: InputTimeline | None,
    on_sent: Callable[[PlannedAppend], None] | None,
    sleep: Callable[[float], Awaitable[None]],
    end_ms: int,
) -> tuple[list[str], int]:
    """Send every planned append at its release time; the event ids and the last media end."""
    if prefetch.inline:
        return await _send_inline(prefetch, target, clock, timeline, on_sent, sleep, end_ms)
    ids: list[str] = []
    while (due := await prefetch.next_end()) is not None:
        # Planned ahead (frame decoding and encoding happen there, not after the wait); a
        # server commit heard during the wait moves the grid, so the label is redone.
        # An append is released when its audio would have been captured (its media end),
        # as a live source's is: the server never hears a sample before it was "spoken".
        if clock.realtime:
            await _sleep_until(clock, due, sleep)
        append = await prefetch.take()
        if clock.realtime and append.media_end_ms > due:
            await _sleep_until(clock, append.media_end_ms, sleep)
        ids.append(await send_append(target, append, clock, timeline, on_sent))
        end_ms = append.media_end_ms
    return ids, end_ms


async def _send_inline(
    prefetch: PlanPrefetcher,
    target: StreamTarget,
    clock: MediaClock,
    timeline: InputTimeline | None,
    on_sent: Callable[[PlannedAppend], None] | None,
    sleep: Callable[[float], Awaitable[None]],
    end_ms: int,
) -> tuple[list[str], int]:
    """`_send_planned` for appends planned on the loop's thread: the same releases and records.

    The deadline arithmetic is `MediaClock.wait_s`'s with the pacing and anchor read once (they
    do not change while a stream sends), and the plan is read without awaiting: a dozen
    Python calls fewer per append than the general loop.
    """
    ids: list[str] = []
    realtime = clock.realtime
    t0 = clock.t0 if realtime else 0.0
    now = clock.now
    while (head := prefetch.head_now()) is not None:
        if realtime:  # as `_sleep_until`: deadlines met to within the slack
            due = head.media_end_ms
            while (wait := t0 + due / 1000 - now()) > _DEADLINE_SLACK_S:
                await sleep(wait)
        append = prefetch.take_now()
        if realtime and append.media_end_ms > head.media_end_ms:  # relabelled meanwhile
            await _sleep_until(clock, append.media_end_ms, sleep)
        if timeline is None and on_sent is None:
            ids.append(await append_planned(target, append))
        else:
            ids.append(await send_append(target, append, clock, timeline, on_sent))
        end_ms = append.media_end_ms
    return ids, end_ms
