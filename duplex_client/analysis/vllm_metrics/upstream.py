"""vLLM-Omni 0.30.0's duplex session metrics, computed as 0.30.0 computes them.

The rules restated from `vllm_omni/benchmarks/duplex_session_metrics.py`
(`collect_duplex_session_metrics`, `audio_rtf_from_raw_metric`, `duplex_stream_metrics`) and
`vllm_omni/clients/duplex.py` (`EventCollector.timing_summary`, `.global_timing_summary`,
`summarize_session_request_metrics`), with `vllm_omni/clients/utils.py` for the stage blocks:

- only events received at or after the stream start count, and only responses a
  `response.created` named (in its order);
- a response gets a row when it sent audio after its `response.created` (TTFT, TTFP, RTF,
  TPOT), or when the server reported stage metrics for it (a row with none of those);
- TTFT/TTFP are the server's `response_request_metrics` when it sent them, else measured from
  the receipt of `response.created` to the first non-empty text / audio delta;
- a response's audio duration is the largest `metadata.audio_duration_ms` of its deltas, else
  the bytes of all its audio deltas as PCM16 at the last rate a delta named (24 kHz if none);
- RTF: `response.created` (the stream start, for `stream_rtf`) to the last audio delta, over
  that duration; every ms figure is rounded to 3 decimals before the RTF divides them.

All times are ms on one clock; an event whose time is None is before any stream start.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from duplex_client.analysis.vllm_metrics.observed import AUDIO_DELTA, RESPONSE_CREATED, Observed
from duplex_client.analysis.vllm_metrics.summary import (
    MS_DIGITS,
    RTF_DIGITS,
    audio_rtf,
    non_negative,
    positive,
    rounded_ms,
    summarize,
)

#: `EventCollector.output_sample_rate_hz` until an audio delta names a rate.
DEFAULT_OUTPUT_RATE_HZ = 24_000

#: One received event: its time (ms; None: no time) and what the metrics read of it.
Timed = tuple[float | None, Observed]


@dataclass
class _Seen:
    """One response's events from the stream start on."""

    created: float | None = None
    first_text: float | None = None
    first_audio: float | None = None
    last_audio: float | None = None
    durations: list[float] = field(default_factory=list)
    request_metrics: dict[str, Any] = field(default_factory=dict)
    stages: dict[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UpstreamRow:
    """One response's row of upstream's `duplex_request_metrics` (what the session sums)."""

    response_id: str
    measured: bool
    ttft_ms: float | None = None
    ttfp_ms: float | None = None
    rtf: float | None = None
    tpot_ms: float | None = None
    output_tokens: int | None = None


def _stage_tokens(stage: Mapping[str, Any]) -> int:
    """`output_token_count` of upstream's block for a Stage-0 snapshot (0 where its block has
    none: audio, codec-stream, image and video stages)."""
    final, unit = stage.get("final_output_type"), stage.get("output_unit_type")
    final = final if isinstance(final, str) else ""
    unit = unit if isinstance(unit, str) else ""
    text = final == "text" or unit == "text"
    audio = final == "audio" or unit == "audio"
    video = final in ("video", "videos") or unit == "video"
    image = not video and (final in ("image", "images") or unit == "image")
    codec_stream = unit == "stream" and not text and not audio
    itls = stage.get("vllm_itls_ms")
    legacy = bool(stage.get("vllm_ttft_ms") or stage.get("vllm_tpot_ms")) or (
        isinstance(itls, list) and bool(itls)
    )
    if not (text or (not audio and not codec_stream and not image and not video and legacy)):
        return 0
    try:
        return int(stage.get("num_tokens_out") or 0)
    except (TypeError, ValueError, OverflowError):
        return 0


class UpstreamSession:
    """One session's events, read once; `rows` and `metrics()` are upstream's."""

    def __init__(self, events: Sequence[Timed], *, stream_start_ms: float) -> None:
        self.start = stream_start_ms
        self.order: list[str] = []
        self.rate = DEFAULT_OUTPUT_RATE_HZ
        self._bytes: dict[str, int] = {}
        for _, seen in events:  # what the collector keeps whatever the time
            rid = seen.response_id
            if seen.type == RESPONSE_CREATED and rid and rid not in self.order:
                self.order.append(rid)
            if seen.type == AUDIO_DELTA:
                if seen.audio and seen.audio_bytes and rid:
                    self._bytes[rid] = self._bytes.get(rid, 0) + seen.audio_bytes
                if seen.sample_rate_hz:
                    self.rate = seen.sample_rate_hz
        self._seen: dict[str, _Seen] = {}
        self._stream_text: float | None = None
        self._stream_audio: list[float] = []
        self._stream_durations: dict[str, float] = {}
        selected = set(self.order)
        for at, seen in events:
            if at is None or at < self.start or seen.response_id is None:
                continue
            self._read(at, seen, self._seen.setdefault(seen.response_id, _Seen()))
            if seen.response_id in selected:
                self._read_stream(at, seen)

    def _read(self, at: float, seen: Observed, s: _Seen) -> None:
        if seen.type == RESPONSE_CREATED and s.created is None:
            s.created = at
        if seen.text and s.first_text is None:
            s.first_text = at
        for stage_id, snapshot in (seen.stage_metrics or {}).items():
            if isinstance(snapshot, Mapping):
                s.stages[str(stage_id)] = snapshot
        if seen.request_metrics is not None:
            s.request_metrics.update(seen.request_metrics)
        if seen.type == AUDIO_DELTA and seen.audio:
            s.first_audio = at if s.first_audio is None else s.first_audio
            s.last_audio = at
            if seen.duration_ms is not None:
                s.durations.append(max(0.0, float(seen.duration_ms)))

    def _read_stream(self, at: float, seen: Observed) -> None:
        if seen.text and self._stream_text is None:
            self._stream_text = at
        if seen.type != AUDIO_DELTA or not seen.audio or seen.response_id is None:
            return
        self._stream_audio.append(at)
        duration = non_negative(seen.duration_ms)
        if duration is not None:
            rid = seen.response_id
            self._stream_durations[rid] = max(self._stream_durations.get(rid, 0.0), duration)

    def _bytes_ms(self, rid: str) -> float:
        return self._bytes.get(rid, 0) * 1000.0 / (self.rate * 2)

    def rows(self) -> list[UpstreamRow]:
        """The rows of the responses that have one, in `response.created` order."""
        out = []
        for rid in self.order:
            s = self._seen.get(rid, _Seen())
            stage0 = s.stages.get("0")
            tokens = _stage_tokens(stage0) if stage0 is not None else None
            if s.first_audio is None or s.last_audio is None or s.created is None:
                if s.stages:
                    out.append(UpstreamRow(rid, measured=False, output_tokens=tokens))
                continue
            server_ttft = non_negative(s.request_metrics.get("ttft_ms"))
            server_ttfp = non_negative(s.request_metrics.get("ttfp_ms"))
            ttft = server_ttft
            if ttft is None and s.first_text is not None:
                ttft = rounded_ms(s.first_text - s.created)
            duration = max(s.durations) if s.durations else self._bytes_ms(rid)
            generation = rounded_ms(max(0.0, s.last_audio - s.created))
            row = UpstreamRow(
                rid,
                measured=True,
                ttft_ms=ttft,
                ttfp_ms=server_ttfp
                if server_ttfp is not None
                else rounded_ms(s.first_audio - s.created),
                rtf=audio_rtf(generation, rounded_ms(duration)),
                tpot_ms=non_negative(stage0.get("vllm_tpot_ms")) if stage0 is not None else None,
                output_tokens=tokens,
            )
            out.append(row)
        return out

    def stream(self) -> tuple[float | None, float | None, float | None]:
        """The session window's `stream_ttft_ms`, `stream_ttfp_ms` and `stream_rtf`."""
        if not self._stream_audio:
            return None, None, None
        ttft = None if self._stream_text is None else rounded_ms(self._stream_text - self.start)
        duration = sum(self._stream_durations.get(rid, self._bytes_ms(rid)) for rid in self.order)
        generation = rounded_ms(max(0.0, self._stream_audio[-1] - self.start))
        rtf = audio_rtf(generation, rounded_ms(duration))
        return ttft, rounded_ms(self._stream_audio[0] - self.start), rtf

    def metrics(self) -> dict[str, Any]:
        """The session's metrics under upstream's names, each distribution as
        `{count, mean, p50, p99}`; `output_tokens` adds upstream's `total`."""
        rows = self.rows()
        measured = [r for r in rows if r.measured]
        tokens = [r.output_tokens for r in rows if r.output_tokens is not None]
        ttft, ttfp, rtf = self.stream()

        def window(value: float | None, digits: int) -> dict[str, float | None]:
            # Across sessions upstream keeps a window value only when it is not negative.
            return summarize([non_negative(value)], digits=digits)

        return {
            "audio_turn_count": len(rows),
            "ttft_ms": summarize([r.ttft_ms for r in measured]),
            "ttfp_ms": summarize([r.ttfp_ms for r in measured]),
            "rtf": summarize([r.rtf for r in measured], digits=RTF_DIGITS),
            "tpot_ms": summarize([positive(r.tpot_ms) for r in measured]),
            "output_tokens": {**summarize([float(n) for n in tokens]), "total": sum(tokens)},
            "stream_ttft_ms": window(ttft, MS_DIGITS),
            "stream_ttfp_ms": window(ttfp, MS_DIGITS),
            "stream_rtf": window(rtf, RTF_DIGITS),
        }


def upstream_metrics(events: Sequence[Timed], *, stream_start_ms: float) -> dict[str, Any]:
    """vLLM-Omni 0.30.0's metrics of one session from its received events, in arrival order."""
    return UpstreamSession(events, stream_start_ms=stream_start_ms).metrics()
