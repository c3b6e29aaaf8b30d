"""The live loop: captured blocks → live framer → session, with switches, turns and playback."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from duplex_client.analysis.playback import LiveOutput
from duplex_client.client.prefetch import planning_pool
from duplex_client.client.server_commits import ServerCommitFollower
from duplex_client.client.session import DuplexClientBase
from duplex_client.client.stream_end import StreamEnd
from duplex_client.client.streaming import append_planned
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.live import LiveFramer
from duplex_client.framing.pcm_format import DEFAULT_PCM, PcmFormat, Retargetable
from duplex_client.framing.plan import FramerConfig, PlannedAppend, StreamPosition
from duplex_client.framing.redact import audio_source_facts, video_facts
from duplex_client.framing.timeline import InputTimeline
from duplex_client.media.devices.camera import CameraFeed
from duplex_client.media.devices.capture import AudioBlock, AudioCapture, FrameCapture
from duplex_client.media.devices.lookup import DeviceError
from duplex_client.protocol import server_events as se
from duplex_client.protocol.errors import DuplexClientError
from duplex_client.run.controls import Action, LiveControls
from duplex_client.run.playback import PlaybackSync
from duplex_client.run.progress import RunProgress
from duplex_client.run.sources.devices.answers import AnswerWatch
from duplex_client.run.turns import COMMIT_TURNS, TURN_MODES, TurnMode, no_commits_error
from duplex_client.usage import UsageError

#: How long `end_stream()` may wait for the drained response when a continuous stream is quit.
DRAIN_TIMEOUT_S = 10.0
_POLL_S = 0.25
_TRANSCRIPT_LINES = 6


class LiveSession:
    """Runs one live conversation over an open client until quit, a time limit or an error.

    Every captured block drives the loop: scheduled actions and switches are applied at
    block boundaries, the block is framed (uploaded, or not while muted, outside a
    push-to-talk hold, or behind the echo gate) and the appends whose capture completed
    are sent and recorded in the timeline (`segment: live`, scheduled at capture
    completion). In `ptt` mode releasing the talk key commits the hold if it uploaded
    audio; in `vad` mode the server's commits re-anchor the grid. The session owns the
    capture devices from `run()` until it returns; the player and the `PlaybackSync` that
    drives it belong to the run's listener when `sync` is given (a `SessionRun`), else to
    this session (code that opens its own client and devices).

    Audio goes out in the session's input format (`client.input_pcm_format`, e.g. 24 kHz
    float32 for PersonaPlex-style): the microphone is told it before it starts. A session
    that takes no commits (`client.takes_commits` false) refuses `vad` and `ptt` turns with
    a `UsageError`; a continuous stream is ended with `end_stream()` when the loop ends
    (quit, time limit): `session.close`, which drains its one response; `drained` keeps how.
    """

    def __init__(
        self,
        client: DuplexClientBase,
        mic: AudioCapture,
        *,
        camera: FrameCapture | None = None,
        camera_optional: bool = False,
        player: LiveOutput | None = None,
        sync: PlaybackSync | None = None,
        turn: TurnMode = "model",
        controls: LiveControls | None = None,
        mic_present: bool = True,
        echo_gate: bool = False,
        chunk_ms: int = 200,
        jpeg_quality: int = 80,
        frame_max_side: int = 640,
        timeline: InputTimeline | None = None,
        progress: RunProgress | None = None,
        schedule: Sequence[tuple[int, Action]] = (),
        duration_s: float | None = None,
        stall_timeout_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        media_clock: MediaClock | None = None,
        on_sent: Callable[[PlannedAppend], None] | None = None,
    ) -> None:
        if turn not in TURN_MODES:
            raise ValueError(f"turn must be one of {', '.join(TURN_MODES)}")
        self.client = client
        self.mic = mic
        self.camera = camera
        self.camera_optional = camera_optional
        self.player = player
        self.turn: TurnMode = turn
        self.controls = controls or LiveControls(clock=clock)
        self.mic_present = mic_present
        self.echo_gate = echo_gate
        self.chunk_ms = chunk_ms
        self.timeline = timeline if timeline is not None else InputTimeline()
        self.progress = progress or RunProgress(figures=False)
        self.schedule = list(schedule)
        self.duration_s = duration_s
        self.stall_timeout_s = stall_timeout_s
        self.clock = media_clock or MediaClock("realtime", now=clock)
        self.on_sent = on_sent
        self.sync = sync
        #: Whether this session starts and stops the player and its sync (none given).
        self._owns_playback = sync is None and player is not None
        self.framer: LiveFramer | None = None
        self._follow_commits: ServerCommitFollower | None = None
        self.feed: CameraFeed | None = None
        self.commit_ids: list[str] = []
        self.append_ids: list[str] = []
        self._jpeg = (jpeg_quality, frame_max_side)
        self._talking = False
        self._hold_samples = 0
        self.fmt: PcmFormat = DEFAULT_PCM
        self.drained: StreamEnd | None = None
        self.answers = AnswerWatch(self.progress, self.clock.now)

    # --- run ---

    async def run(self) -> None:
        """Start the devices, run the loop, then stop them (final acks before the player)."""
        client = self.client
        if self.turn in COMMIT_TURNS and not client.takes_commits:
            what = "this continuous stream" if client.continuous_stream else "this session"
            raise no_commits_error(self.turn, what)
        self.fmt = fmt = client.input_pcm_format
        if isinstance(self.mic, Retargetable):
            self.mic.set_output(fmt)  # through the one resampler, straight to the session's
        elif fmt != DEFAULT_PCM:
            rate = fmt.sample_rate_hz
            raise UsageError(
                f"the audio source cannot deliver {fmt.encoding} at {rate} Hz", keywords=()
            )
        caps = client.capabilities
        config = FramerConfig.from_capabilities(caps, chunk_ms=self.chunk_ms, pcm=fmt)
        start = StreamPosition.after_audio(client.audio_end_ms, config.grid)
        self.framer = LiveFramer(config, start)
        self._follow_commits = ServerCommitFollower(self.framer, self.timeline, self.clock)
        if self.mic_present and not config.audio_allowed:
            self.progress.warn("the server takes no audio: the microphone is not sent")
        client.add_listener(self._on_event)
        ack_task: asyncio.Task[None] | None = None
        try:
            await self.mic.start()
            self._start_camera()
            if self.camera is not None:
                quality, max_side = self._jpeg
                self.feed = CameraFeed(
                    self.camera,
                    lambda: self.clock.t0,
                    jpeg_quality=quality,
                    frame_max_side=max_side,
                    executor=planning_pool(),  # no JPEG encoding on the loop's thread
                )
            if self._owns_playback and self.player is not None:
                self.player.start()
                self.sync = PlaybackSync(client, self.player, clock=self.clock.now)
                self.sync.attach()
                ack_task = asyncio.create_task(self.sync.run(), name="duplex-live-acks")
            self._describe(config)
            self.progress.phase = "live"
            await self._loop()
            await self._end_stream()
        finally:
            self.progress.phase = "closing"
            await self._stop(ack_task)

    async def _end_stream(self) -> None:
        """A continuous stream ends at `session.close`, which drains it; how is kept."""
        if not self.client.continuous_stream or not self.client.is_open:
            return
        self.progress.phase = "draining"
        try:
            self.drained = await self.client.end_stream(timeout=DRAIN_TIMEOUT_S)
        except DuplexClientError as exc:
            self.progress.warn(f"session.close: {exc}")
            return
        if not self.drained.drained:
            self.progress.warn(
                f"the stream did not drain within {DRAIN_TIMEOUT_S:g} s of session.close"
            )

    def _start_camera(self) -> None:
        """Start the camera; an optional one that is missing only warns (audio only)."""
        if self.camera is None:
            return
        try:
            self.camera.start()
        except DeviceError as exc:
            if not self.camera_optional:
                raise
            self.camera = None
            self.progress.camera = None
            self.progress.warn(f"{exc}: audio only")

    async def _stop(self, ack_task: asyncio.Task[None] | None) -> None:
        with contextlib.suppress(Exception):
            await self.mic.close()
        if self.camera is not None:
            self.camera.close()
        if ack_task is not None:
            ack_task.cancel()
            await asyncio.gather(ack_task, return_exceptions=True)
        if self._owns_playback:
            if self.sync is not None and self.client.is_open:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.sync.close())
            if self.player is not None:
                self.player.close()
        self.timeline.audio_source = audio_source_facts(self._audio_info())
        if self.feed is not None:
            self.timeline.video = video_facts(self.feed.info(self._unit_ms()))
            if self.client.capabilities.supports_image_input and self.timeline.video is not None:
                self.timeline.video = {**self.timeline.video, "frames_sent_as": "input_image_items"}

    def _audio_info(self) -> dict[str, Any] | None:
        return self.mic.info() if self.mic_present else None

    def _unit_ms(self) -> int:
        return self.client.capabilities.chunk_period_ms

    def _describe(self, config: FramerConfig) -> None:
        tl = self.timeline
        tl.clock = self.clock
        tl.listen_to(self.client)
        tl.set_unit_grid(config.grid, self.client.capabilities)
        tl.input_format = self.fmt.to_dict()
        tl.describe_stream(
            chunk_ms=config.chunk_ms,
            media_origin_ms=0,
            audio_source=self._audio_info(),
            video=None if self.feed is None else self.feed.info(self._unit_ms()),
            pacing="realtime",
        )

    async def _next_block(self) -> AudioBlock | None:
        waited = 0.0
        while not self.controls.quit_requested and self.client.is_open:
            try:
                # Not `wait_for`: on Python 3.11 it can swallow a cancellation that lands
                # as the read completes (SIGTERM then left the session running).
                async with asyncio.timeout(_POLL_S):
                    return await self.mic.read()
            except TimeoutError:
                waited += _POLL_S
                if waited >= self.stall_timeout_s:
                    raise DeviceError(
                        f"the microphone delivered no audio for {self.stall_timeout_s:g} s"
                    ) from None
        return None

    async def _loop(self) -> None:
        framer = self.framer
        assert framer is not None
        rate = self.fmt.sample_rate_hz
        while (block := await self._next_block()) is not None:
            if not self.clock.started:
                first = block.captured_at - block.start_sample / rate
                self.clock.start((self.clock.now() - first) * 1000)
            gap = block.start_sample - framer.media_samples
            if gap > 0:  # blocks were lost: their time passes without audio
                await self._send(framer.idle(gap))
            self._run_schedule(block.start_sample * 1000 // rate)
            if self.controls.take_interrupt():
                await self._interrupt()
            await self._turn_switches(framer)
            framer.set_camera(self.feed if self.controls.camera_on else None)
            upload = self._upload_allowed()
            if upload and self.turn == "ptt" and framer.can_upload():
                self._hold_samples += block.samples
            await self._send(framer.push(block.pcm, upload=upload))
            self._refresh(block)
            media_s = framer.media_samples / rate
            if self.controls.quit_requested or (
                self.duration_s is not None and media_s >= self.duration_s
            ):
                return

    def _run_schedule(self, media_ms: int) -> None:
        while self.schedule and self.schedule[0][0] <= media_ms:
            _, action = self.schedule.pop(0)
            self.controls.apply(action)

    async def _turn_switches(self, framer: LiveFramer) -> None:
        """Push-to-talk edges: a press interrupts the assistant, a release commits the hold."""
        if self.turn != "ptt":
            return
        was, self._talking = self._talking, self.controls.talking()
        if self._talking and not was:
            self._hold_samples = 0
            if self.player is not None and (self.player.audible() or self._speaking()):
                await self._interrupt()
        if was and not self._talking:
            out = framer.commit()
            await self._send(out)
            if self._hold_samples > 0:
                await self._commit(framer)
            self._hold_samples = 0

    def _speaking(self) -> bool:
        active = self.client.tracker.active
        return active is not None and not active.done

    def _upload_allowed(self) -> bool:
        if not self.mic_present or self.controls.muted:
            return False
        if self.turn == "ptt":
            return self._talking
        gated = self.echo_gate and self.player is not None and self.player.audible()
        self.progress.gated = gated
        return not gated

    async def _interrupt(self) -> None:
        if self.sync is not None and await self.sync.barge_in():
            self.progress.decision = "interrupted"

    # --- sending ---

    async def _send(self, appends: list[PlannedAppend]) -> None:
        follow = self._follow_commits
        if follow is not None:
            follow.expect(appends)  # a server commit heard meanwhile relabels the rest
        for planned in appends:
            if self.feed is not None:  # its frame's JPEG, on a worker since the unit closed
                await self.feed.encoded(planned)
            a = planned if follow is None else follow.take()
            if self.feed is not None:
                a = self.feed.resolve(a)
            sent_at = self.clock.now()
            event_id = await append_planned(self.client, a)
            self.append_ids.append(event_id)
            self.timeline.add_append(a, event_id, self.clock.timing(a.media_end_ms, sent_at))
            if self.on_sent is not None:
                self.on_sent(a)
            if a.unit_index is not None:
                self.answers.unit_sent(a.unit_index, sent_at)
                self.progress.units[a.unit_kind.value if a.unit_kind else "AUDIO"] += 1

    async def _commit(self, framer: LiveFramer) -> None:
        create = None if self.client.config.auto_response else True
        due_ms = framer.media_samples * 1000 // self.fmt.sample_rate_hz
        guard = self.sync.commit_guard() if self.sync is not None else contextlib.nullcontext()
        async with guard:
            sent_at = self.clock.now()
            event_id = await self.client.commit(create_response=create)
        self.commit_ids.append(event_id)
        self.timeline.add_commit(
            event_id, self.clock.timing(due_ms, sent_at), response_create=create
        )
        framer.committed()
        self.answers.committed(sent_at)

    # --- events (reader task) ---

    def _on_event(self, event: se.ServerEvent, received_at: float) -> None:
        ours = False
        if isinstance(event, se.InputAudioBufferCommitted):
            ours = event.client_event_id in self.commit_ids
            if not ours and self._follow_commits is not None:
                self._follow_commits(event, received_at)
        self.answers.on_event(event, received_at, ours=ours, played=self.player is not None)

    @property
    def latencies(self) -> list[float]:
        """Latency of every answer heard so far, in ms (see `AnswerWatch`)."""
        return self.answers.latencies

    # --- display ---

    def _refresh(self, block: AudioBlock) -> None:
        p = self.progress
        p.media_ms = block.end_sample * 1000 // self.fmt.sample_rate_hz
        p.mic_level_dbfs = self.mic.level_dbfs if self.mic_present else -96.0
        p.muted = self.controls.muted
        p.camera_on = self.controls.camera_on and self.feed is not None
        p.frames_sent = 0 if self.feed is None else self.feed.frames_sent
        p.talking = self._talking
        p.audible = self.player is not None and self.player.audible()
        p.appends = len(self.append_ids)
        p.interruptions = 0 if self.sync is None else self.sync.interruptions
        p.commits = len(self.commit_ids)
        if self.player is not None:
            self.answers.heard(self.player.first_rendered)
        lines = []
        for handle in list(self.client.tracker.handles.values())[-_TRANSCRIPT_LINES:]:
            text = handle.transcript or handle.text
            if text:
                lines.append(text + (" …" if handle.fenced else ""))
        p.transcript_lines = lines
