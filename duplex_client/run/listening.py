"""The listening side of one run: where answers play, their playback acks, and the report.

A run plays answers into a `HeardOutput`: the listener model's `VirtualPlayer` for a file
or a replay (its acks report what the virtual listener heard by now), the device `Player`
for live mode, or nothing (asap pacing, or live without playback: no acks). One
`PlaybackSync` drives either; at the end `report()` writes `heard.wav` and
`conversation.wav` from what the output heard and measures the turns, off the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from duplex_client.analysis.annotations import SpeechSegment
from duplex_client.analysis.playback import Heard, HeardOutput
from duplex_client.analysis.spoken import split_all
from duplex_client.analysis.turns import ResponseFacts
from duplex_client.analysis.vllm_metrics import (
    Observed,
    ResponseTiming,
    Timed,
    observe,
    server_request_metrics,
)
from duplex_client.bundle.layout import SENT_FILE
from duplex_client.client.responses import ResponseHandle
from duplex_client.client.session import DuplexClientBase
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.timeline import InputTimeline
from duplex_client.protocol.server_events import ServerEvent
from duplex_client.run.listening_report import ListeningReport, SentAudio
from duplex_client.run.playback import TICK_S, PlaybackSync

if TYPE_CHECKING:
    from duplex_client.media.plan_cache import PlanCache


def unit_send_times(timeline: InputTimeline) -> dict[int, float]:
    """Send time (media ms) of the append that closed each unit."""
    return {
        row["unit_index"]: row["sent_offset_ms"]
        for row in timeline.appends
        if row["unit_kind"] is not None and row["unit_index"] is not None
    }


class RunListening:
    """Owns where a run's answers play, the sync and acks that drive it, and the sent audio."""

    def __init__(
        self,
        client: DuplexClientBase,
        clock: MediaClock,
        out_dir: Path,
        output: HeardOutput | None,
        *,
        annotations: Sequence[SpeechSegment] | None = None,
        speech_cache: PlanCache | None = None,
    ) -> None:
        self.client = client
        self.clock = clock
        self.out_dir = out_dir
        self.annotations = annotations
        #: Where user speech found by voice activity is kept (the plan cache), if anywhere.
        self.speech_cache = speech_cache
        self.rate = client.config.output_sample_rate_hz
        self.output = output
        self.sync: PlaybackSync | None = None
        if output is not None:
            self.sync = PlaybackSync(client, output, clock=clock.now)
        self.sent = SentAudio(out_dir / SENT_FILE, client.input_pcm_format)
        self._task: asyncio.Task[None] | None = None
        #: Every event vLLM-Omni's metrics read, with its receive time (monotonic s).
        self.received: list[tuple[float, Observed]] = []
        client.add_listener(self._observe)

    def _observe(self, event: ServerEvent, received_at: float) -> None:
        seen = observe(event.raw)
        if seen is not None:
            self.received.append((received_at, seen))

    def start(self) -> None:
        """Start the output and the acks (once the session is open)."""
        if self.output is None or self.sync is None or self._task is not None:
            return
        self.output.start()
        self.sync.attach()
        self._task = asyncio.create_task(self.sync.run(), name="duplex-playback-acks")

    def playing(self) -> bool:
        """Whether the output still has answer audio to play."""
        return self.output is not None and self.output.playing()

    async def drain(self, timeout_s: float) -> bool:
        """Wait (at most `timeout_s`) until every queued answer was heard."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        # a cleanly closed session (a drained continuous stream) is still heard to its end
        heard_out = self.client.is_open or self.client.closed_reason == "client_close"
        while self.playing() and heard_out and loop.time() < deadline:
            await asyncio.sleep(TICK_S)
        return not self.playing()

    async def stop(self) -> None:
        """Stop the acks (final ones, truncating what was cut, while the session is open),
        then the output."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self.sync is not None and self.client.is_open:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.sync.close())
        if self.output is not None:
            self.output.close()

    def heard_start_ms(self, response_id: str) -> float | None:
        """Where a response starts in `heard.wav` (None: not heard yet or not known)."""
        if self.output is None:
            return None
        return self.output.heard_start_ms(response_id, self.clock.media_ms_at)

    # --- the end of the run ---

    def _media(self, t: float | None) -> float | None:
        return None if t is None else self.clock.media_ms_at(t)

    def facts(self, handles: Sequence[ResponseHandle]) -> list[ResponseFacts]:
        """The spoken responses as the turn table needs them."""
        return [
            ResponseFacts(
                response_id=h.response_id,
                unit_index=h.metadata.get("unit_index"),
                decided_ms=self._media(h.decided_at),
                first_audio_ms=self._media(h.first_audio_at),
                received_ms=round(len(h.audio_bytes()) * 500 / h.sample_rate_hz, 3),
                transcript=h.transcript or h.text,
            )
            for h in handles
            if h.decision == "speak" and h.response_id is not None
        ]

    def timings(
        self, handles: Sequence[ResponseHandle], unit_sent: dict[int, float]
    ) -> list[ResponseTiming]:
        """The spoken responses as our own TTFT/TTFP figures need them."""
        out = []
        for h in handles:
            if h.decision != "speak":
                continue
            unit = h.metadata.get("unit_index")
            ttft = ttfp = None
            for raw in h.marks.values():
                t, p = server_request_metrics(raw)
                ttft, ttfp = ttft if ttft is not None else t, ttfp if ttfp is not None else p
            out.append(
                ResponseTiming(
                    start_ms=unit_sent.get(unit) if isinstance(unit, int) else None,
                    created_ms=self._media(h.created_at),
                    first_text_ms=self._media(h.first_text_at),
                    first_audio_ms=self._media(h.first_audio_at),
                    server_ttft_ms=ttft,
                    server_ttfp_ms=ttfp,
                )
            )
        return out

    def events(self) -> list[Timed]:
        """The received events vLLM-Omni's metrics read, each at its media time."""
        return [(self._media(t), seen) for t, seen in self.received]

    def heard(self) -> Heard:
        """Heard segments, the audio they index and per-response spans (none: nothing played)."""
        if self.output is None:
            return Heard([], {}, [])
        cut_by = dict(self.sync.cut_by) if self.sync is not None else {}
        return self.output.heard(self.clock.media_ms_at, cut_by)

    async def report(
        self,
        handles: Sequence[ResponseHandle],
        timeline: InputTimeline,
        media_end_ms: int,
        *,
        warn: Callable[[str], None] | None = None,
    ) -> ListeningReport:
        """Write the heard files and measure the turns (heavy parts in a worker thread)."""
        segments, audio, spans = self.heard()
        facts = self.facts(handles)
        if self.client.continuous_stream:  # one response for the stream: its answers are turns
            facts, segments, audio, spans = split_all(facts, segments, audio, spans, self.rate)
        from duplex_client.run.report_process import build_report  # not in the child's imports

        unit_sent = unit_send_times(timeline)
        try:
            sent = await asyncio.to_thread(self.sent.read)
            report = await build_report(
                out_dir=self.out_dir,
                sample_rate_hz=self.rate,
                media_end_ms=media_end_ms,
                sent=sent,
                sent_rate_hz=self.sent.rate_hz,
                segments=segments,
                audio=audio,
                spans=spans,
                responses=facts,
                timings=self.timings(handles, unit_sent),
                events=self.events(),
                unit_sent_ms=unit_sent,
                annotations=self.annotations,
                played=self.output is not None,
                speech_cache=self.speech_cache,
            )
        finally:  # closing and unlinking the sparse file takes tens of ms: off the loop
            await asyncio.to_thread(self.sent.discard)
        for line in report.warnings:
            if warn is not None:
                warn(line)
        return report
