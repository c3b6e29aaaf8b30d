"""Stream a source to a session: framer appends released on the media clock (protocol.md §10)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from duplex_client.client.pacer import loop_pacer
from duplex_client.client.prefetch import PlanPrefetcher
from duplex_client.client.server_commits import ServerCommitFollower
from duplex_client.client.streaming.reconnects import attach_timeline
from duplex_client.client.streaming.result import StreamResult
from duplex_client.client.streaming.sending import _send_planned, _sleep_until
from duplex_client.client.streaming.targets import StreamTarget, _TakesCommits, _Unlistenable
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.framer import Framer
from duplex_client.framing.pcm_format import DEFAULT_PCM, HasSessionFormat, Retargetable
from duplex_client.framing.plan import (
    DEFAULT_CHUNK_MS,
    FramerConfig,
    PlannedAppend,
    SoundtrackPolicy,
    StreamPosition,
    audio_policies,
)
from duplex_client.framing.sources import (
    AudioVisualSource,
    BytesPcmSource,
    FrameSampler,
    PcmSource,
)
from duplex_client.framing.timeline import InputTimeline
from duplex_client.framing.units import UnitGrid, samples_to_ms
from duplex_client.protocol.capabilities import Capabilities

#: Internal switch (benchmarks only): False plans every append inline on the loop's thread.
PLAN_IN_WORKER = True

#: What `stream` accepts as its input.
Source = AudioVisualSource | PcmSource | bytes | None


def _in_memory(pcm: PcmSource | None, sampler: FrameSampler | None) -> bool:
    """Whether planning only slices memory (PCM bytes, a still image's one JPEG)."""
    return all(s is None or getattr(s, "in_memory", False) is True for s in (pcm, sampler))


def _split_source(
    source: Source, frames: FrameSampler | None
) -> tuple[PcmSource | None, FrameSampler | None]:
    if isinstance(source, AudioVisualSource):
        if frames is not None and source.frames is not None:
            raise ValueError("frames given twice (in the source and as frames=)")
        return source.audio, source.frames or frames
    if isinstance(source, bytes | bytearray):
        return BytesPcmSource(bytes(source)), frames
    return source, frames


def _start_position(
    target: StreamTarget, clock: MediaClock, grid: UnitGrid, position: StreamPosition | None
) -> StreamPosition:
    if position is None:
        media = clock.media_now_ms() if clock.started else 0
        return StreamPosition.after_audio(target.audio_end_ms, grid, media_ms=media)
    sent_ms = samples_to_ms(position.audio_samples, grid.sample_rate_hz)
    if abs(sent_ms - target.audio_end_ms) > 1:
        raise ValueError(
            f"position says {sent_ms} ms of audio were sent, the session says "
            f"{target.audio_end_ms} ms: continue from the result of the previous stream"
        )
    return position


async def stream(
    target: StreamTarget,
    source: Source = None,
    *,
    frames: FrameSampler | None = None,
    tail_silence_s: float = 0.0,
    realtime: bool | None = None,
    chunk_ms: int = DEFAULT_CHUNK_MS,
    soundtrack_policy: SoundtrackPolicy = "trim",
    commit: bool | None = None,
    response_create: bool | None = None,
    timeline: InputTimeline | None = None,
    clock: MediaClock | None = None,
    position: StreamPosition | None = None,
    media_origin_ms: int | None = None,
    unit_index: int | None = None,
    grid: UnitGrid | None = None,
    segment: Literal["clip", "live"] = "clip",
    on_sent: Callable[[PlannedAppend], None] | None = None,
    now: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> StreamResult:
    """Frame `source` (+ `tail_silence_s` of silence) onto the session's unit grid and send it.

    Append k is released at `t0 + media_end_ms(k)` (realtime) or back to back (asap,
    `realtime=False`); late sends are recorded, never shifting later deadlines. In realtime the
    final commit goes out at `t0 + media_end_ms(last)`. `source` is PCM bytes, a `PcmSource` or
    an `AudioVisualSource` (`audio` and/or `frames`: a `MediaInput`, a `media.Clip`); a video
    soundtrack gets `soundtrack_policy`, and other audio shorter than the video it comes with is
    fitted to the video by it (`Framer.plan`'s `video_fit`). To continue a previous stream (same
    media timeline, unit numbering and t0) pass its result's `position` and `clock`;
    `media_origin_ms`/`unit_index` override them. `now`/`sleep` are injectable for tests
    (ignored for `now` when `clock` is given). Each append and the commit are recorded in
    `timeline`, which is written to its `path` (if set) when the stream ends; `on_sent` is
    called with every append as it was sent (after any relabelling). Appends are planned (media
    decoded and encoded) in a worker thread a few appends ahead of the clock; with an injected
    `sleep`, or from sources in memory (PCM bytes, a still image), they are planned inline on
    the loop's thread, one at a time.
    `commit` None commits unless the session takes no commits (`takes_commits`: a
    continuous stream ends with `end_stream()`, a commit-free model just listens on). PCM
    goes out in the session's input format (`input_pcm_format`); file sources decode to it.
    """
    if tail_silence_s < 0:
        raise ValueError("tail_silence_s must not be negative")
    if commit is None:  # a continuous stream or a commit-free model is never committed
        commit = target.takes_commits if isinstance(target, _TakesCommits) else True
    clock = _stream_clock(clock, realtime, now)
    caps = target.capabilities
    fmt = target.input_pcm_format if isinstance(target, HasSessionFormat) else DEFAULT_PCM
    config = FramerConfig.from_capabilities(caps, chunk_ms=chunk_ms, grid=grid, pcm=fmt)
    pcm, sampler = _split_source(source, frames)
    if fmt != DEFAULT_PCM and isinstance(pcm, Retargetable):
        pcm.set_output(fmt)  # decoded straight to the session's format by the one resampler
    audio_info = pcm.info() if pcm is not None else None
    soundtrack, video_fit = audio_policies(audio_info, sampler, soundtrack_policy)
    start = _start_position(target, clock, config.grid, position)
    start = start.moved(media_ms=media_origin_ms, unit_index=unit_index)
    framer = Framer(config, start)
    tail_ms = round(tail_silence_s * 1000)
    plan = framer.plan(
        pcm,
        sampler,
        tail_silence_ms=tail_ms,
        soundtrack_policy=soundtrack,
        video_fit=video_fit,
        segment=segment,
    )
    describes = False
    if timeline is not None:
        describes = _prepare_timeline(
            timeline, target, clock, caps, config, grid, start, tail_ms, audio_info, sampler
        )
    if (
        describes
        and timeline is not None
        and timeline.video is not None
        and caps.supports_image_input
    ):
        # the record says where the rows' frames went: items, each before its append
        timeline.video = {**timeline.video, "frames_sent_as": "input_image_items"}
    clock.start(start.media_ms)
    follower = ServerCommitFollower(framer, timeline, clock)
    # Planning (decoding, resampling, JPEG encoding) runs in a worker thread, a few appends
    # ahead; with an injected `sleep` (fake clocks in tests) it stays inline, as before, and
    # so it does for sources in memory, where a thread hop per append costs more than planning.
    inline = not PLAN_IN_WORKER or sleep is not asyncio.sleep or _in_memory(pcm, sampler)
    if sleep is asyncio.sleep:  # the loop's one timer for every stream's deadlines
        sleep = loop_pacer().sleep
    prefetch = PlanPrefetcher(plan, follower, inline=inline)
    if isinstance(target, _Unlistenable):
        target.add_listener(follower)
    commit_id: str | None = None
    commit_sent_at: float | None = None
    try:
        ids, end_ms = await _send_planned(
            prefetch, target, clock, timeline, on_sent, sleep, start.media_ms
        )
        if describes and timeline is not None:
            timeline.soundtrack_policy = framer.report.soundtrack_record()
            timeline.fitted_to_video(framer.report.video_fit_record())
        end = framer.position
        if commit and ids:
            if clock.realtime:
                await _sleep_until(clock, end_ms, sleep)
            commit_sent_at = clock.now()
            commit_id = await target.commit(final=True, create_response=response_create)
            if timeline is not None:
                timing = clock.timing(end_ms, commit_sent_at)
                timeline.add_commit(commit_id, timing, response_create=response_create)
            end = end.after_commit()
    except BaseException:
        if timeline is not None and timeline.path is not None:
            timeline.write_best_effort()
        raise
    finally:
        try:
            await prefetch.aclose()
        finally:
            if isinstance(target, _Unlistenable):
                target.remove_listener(follower)
    if timeline is not None and timeline.path is not None:
        await _write_timeline(timeline, inline=inline)
    return StreamResult(end, clock, framer.report, tuple(ids), commit_id, end_ms, commit_sent_at)


def _stream_clock(
    clock: MediaClock | None, realtime: bool | None, now: Callable[[], float]
) -> MediaClock:
    """The given clock (checked against `realtime`), or a new one paced as asked."""
    if clock is None:
        return MediaClock("asap" if realtime is False else "realtime", now=now)
    if realtime is not None and realtime != clock.realtime:
        raise ValueError(f"realtime={realtime} contradicts the clock's pacing {clock.pacing!r}")
    return clock


async def _write_timeline(timeline: InputTimeline, *, inline: bool) -> None:
    if inline:
        timeline.write()
    else:  # an fsync'd write must not hold up the other sessions on this loop
        await asyncio.to_thread(timeline.write, text=timeline.render())


def _prepare_timeline(
    timeline: InputTimeline,
    target: StreamTarget,
    clock: MediaClock,
    caps: Capabilities,
    config: FramerConfig,
    grid: UnitGrid | None,
    start: StreamPosition,
    tail_ms: int,
    audio_info: dict[str, Any] | None,
    sampler: FrameSampler | None,
) -> bool:
    """Bind the timeline to this stream; True if this stream is the one describing the file."""
    attach_timeline(timeline, target, clock)
    first = timeline.chunk_ms is None
    if first:
        timeline.set_unit_grid(config.grid, caps, source="override" if grid else None)
        if isinstance(target, HasSessionFormat):
            timeline.input_format = target.input_pcm_format.to_dict()
    timeline.describe_stream(
        chunk_ms=config.chunk_ms,
        media_origin_ms=start.media_ms,
        tail_silence_ms=tail_ms,
        audio_source=audio_info,
        video=sampler.info() if first and sampler is not None else None,
        pacing=clock.pacing,
    )
    return first
