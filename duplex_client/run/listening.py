"""The listening side of one run: playback (virtual or a device), its acks, and the report.

A file stream plays answers into a `VirtualPlayer` (the listener model on the media clock)
driven by the same `PlaybackSync` as live mode's speaker, so its playback acks report what
the virtual listener heard, and `heard.wav` is made from that same schedule. Live mode hands
in the device's rendered blocks instead. Either way `report()` writes `heard.wav` and
`conversation.wav` and measures the turns, off the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path

from duplex_client.analysis.annotations import SpeechSegment
from duplex_client.analysis.heard import segments_from_blocks
from duplex_client.analysis.listener import HeardSegment, HeardSpan
from duplex_client.analysis.turns import ResponseFacts
from duplex_client.analysis.virtual_player import VirtualPlayer
from duplex_client.analysis.vllm_metrics import (
    ResponseTiming,
    engine_token_metrics,
    server_request_metrics,
)
from duplex_client.bundle.layout import SENT_FILE
from duplex_client.client.responses import ResponseHandle
from duplex_client.client.session import DuplexClientBase
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.timeline import InputTimeline
from duplex_client.run.listening_report import ListeningReport, SentAudio
from duplex_client.run.playback import TICK_S, PlaybackSync


def unit_send_times(timeline: InputTimeline) -> dict[int, float]:
    """Send time (media ms) of the append that closed each unit."""
    return {
        row["unit_index"]: row["sent_offset_ms"]
        for row in timeline.appends
        if row["unit_kind"] is not None and row["unit_index"] is not None
    }


class RunListening:
    """Owns the virtual player and its acks for a realtime file stream, and the sent audio."""

    def __init__(
        self,
        client: DuplexClientBase,
        clock: MediaClock,
        out_dir: Path,
        *,
        annotations: Sequence[SpeechSegment] | None = None,
        virtual: bool = True,
    ) -> None:
        self.client = client
        self.clock = clock
        self.out_dir = out_dir
        self.annotations = annotations
        self.rate = client.config.output_sample_rate_hz
        self.player: VirtualPlayer | None = None
        self.sync: PlaybackSync | None = None
        if virtual:
            self.player = VirtualPlayer(clock, self.rate)
            self.sync = PlaybackSync(client, self.player, clock=clock.now)
        self.sent = SentAudio(out_dir / SENT_FILE)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start playing answers and acking them (realtime file streams)."""
        if self.sync is not None and self._task is None:
            self.sync.attach()
            self._task = asyncio.create_task(self.sync.run(), name="duplex-virtual-acks")

    def playing(self) -> bool:
        """Whether the virtual listener still has answer audio to hear."""
        return self.player is not None and self.player.playing()

    async def drain(self, timeout_s: float) -> bool:
        """Wait (at most `timeout_s`) until the listener heard every queued answer."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self.playing() and self.client.is_open and loop.time() < deadline:
            await asyncio.sleep(TICK_S)
        return not self.playing()

    async def stop(self) -> None:
        """Stop the ack task; final acks (truncating what was cut) while the session is open."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self.sync is not None and self.client.is_open:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.sync.close())

    def heard_start_ms(self, response_id: str) -> float | None:
        """Where a response starts in `heard.wav` (None: not heard yet or not known)."""
        if self.player is None:
            return None
        span = self.player.model.span(response_id)
        return None if span is None else span.heard_start_ms

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
        """The spoken responses as vLLM-Omni's session metrics need them."""
        out = []
        for h in handles:
            if h.decision != "speak":
                continue
            unit = h.metadata.get("unit_index")
            ttft = ttfp = None
            for raw in h.marks.values():
                t, p = server_request_metrics(raw)
                ttft, ttfp = ttft if ttft is not None else t, ttfp if ttfp is not None else p
            tpot, tokens = engine_token_metrics(h.marks.get("done", {}))
            out.append(
                ResponseTiming(
                    start_ms=unit_sent.get(unit) if isinstance(unit, int) else None,
                    created_ms=self._media(h.created_at),
                    first_text_ms=self._media(h.first_text_at),
                    first_audio_ms=self._media(h.first_audio_at),
                    last_audio_ms=self._media(h.last_audio_at),
                    audio_ms=round(len(h.audio_bytes()) * 500 / h.sample_rate_hz, 3),
                    server_ttft_ms=ttft,
                    server_ttfp_ms=ttfp,
                    engine_tpot_ms=tpot,
                    output_tokens=tokens,
                )
            )
        return out

    def heard(
        self, device_blocks: Sequence[tuple[float, str, bytes]] | None, cut_by: dict[str, str]
    ) -> tuple[list[HeardSegment], dict[str, bytes], list[HeardSpan]]:
        """Heard segments, the audio they index and per-response spans."""
        if self.player is not None:
            audio = {rid: bytes(pcm) for rid, pcm in self.player.audio.items()}
            return self.player.segments(), audio, self.player.spans()
        blocks = []
        for t, rid, pcm in device_blocks or ():
            media = self.clock.media_ms_at(t)
            if media is not None:
                blocks.append((media, rid, pcm))
        segments, audio = segments_from_blocks(blocks, self.rate)
        return segments, audio, device_spans(segments, audio, self.rate, cut_by)

    async def report(
        self,
        handles: Sequence[ResponseHandle],
        timeline: InputTimeline,
        media_end_ms: int,
        *,
        device_blocks: Sequence[tuple[float, str, bytes]] | None = None,
        cut_by: dict[str, str] | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> ListeningReport:
        """Write the heard files and measure the turns (heavy parts in a worker thread).

        `device_blocks` and `cut_by` describe a device's playback (live mode); without them
        the virtual player's schedule is used.
        """
        if cut_by is None:
            cut_by = dict(self.sync.cut_by) if self.sync is not None else {}
        segments, audio, spans = self.heard(device_blocks, cut_by)
        unit_sent = unit_send_times(timeline)
        try:
            sent = await asyncio.to_thread(self.sent.read)
            report = await asyncio.to_thread(
                ListeningReport.build,
                self.out_dir,
                sample_rate_hz=self.rate,
                media_end_ms=media_end_ms,
                sent=sent,
                segments=segments,
                audio=audio,
                spans=spans,
                responses=self.facts(handles),
                timings=self.timings(handles, unit_sent),
                unit_sent_ms=unit_sent,
                annotations=self.annotations,
            )
        finally:
            self.sent.discard()
        for line in report.warnings:
            if warn is not None:
                warn(line)
        return report


def device_spans(
    segments: Sequence[HeardSegment],
    audio: dict[str, bytes],
    rate: int,
    cut_by: dict[str, str],
) -> list[HeardSpan]:
    """Per-response spans of what a device played (its first block = first heard sample)."""
    spans = []
    for rid, pcm in audio.items():
        own = [s for s in segments if s.response_id == rid]
        ms = 1000 / rate
        spans.append(
            HeardSpan(
                response_id=rid,
                first_audio_ms=None,
                heard_start_ms=round(own[0].start * ms, 3) if own else None,
                heard_end_ms=round(own[-1].end * ms, 3) if own else None,
                heard_ms=round(len(pcm) // 2 * ms, 3),
                received_ms=round(len(pcm) // 2 * ms, 3),
                cut=cut_by.get(rid),
                cut_ms=None,
            )
        )
    return spans
