"""vLLM-Omni's duplex session metrics (TTFT, TTFP, RTF, TPOT), computed from client timings.

The names, definitions and aggregates follow what `vllm bench omni-duplex-eval` reports
through `vllm_omni/benchmarks/duplex_session_metrics.py` and the `EventCollector` of
`vllm_omni/clients/duplex.py` (vllm-project/vllm-omni); docs/metrics.md says which parts a
client sees exactly and which it only approximates.

Rules taken from upstream:

- a response enters the latency and RTF rows only if it produced audio (upstream builds a
  per-response row from its audio packets); a text-only response adds nothing to them;
- text means a non-empty text or transcript delta; audio means a non-empty audio delta;
- TPOT is the engine's own Stage-0 figure, never derived from client timings, and only
  positive values count;
- every aggregate is ``{count, mean, p50, p99}``, percentiles by nearest rank, ms rounded
  to 3 decimals and RTF to 6.

One deviation: a latency that comes out negative (a reference point after the output it
precedes) is left out rather than clamped to 0, since it means the inputs are wrong.

Pure code: no clock, no I/O. Pass every time in ms on one clock (the media clock).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

#: The aggregates upstream's ``distribution_summary`` reports, in order.
AGGREGATES: tuple[str, ...] = ("count", "mean", "p50", "p99")

_MS_DIGITS = 3
_RTF_DIGITS = 6


@dataclass(frozen=True, slots=True)
class ResponseTiming:
    """What the client observed of one response, in ms on one clock (None: not observed).

    - `start_ms`: the send time of the input append whose acceptance the server takes as
      the request start for this response (upstream: the latest append accepted for the
      response's model turn before the response began). TTFT/TTFP origin.
    - `created_ms`: the receive time of this response's `response.created`. Origin of
      upstream's client TTFT/TTFP and of its per-response RTF.
    - `first_text_ms`: the receive time of the first non-empty text or transcript delta.
    - `first_audio_ms`: the receive time of the first non-empty audio delta.
    - `last_audio_ms`: the receive time of the last audio delta (not of `response.done`).
    - `audio_ms`: the duration of the audio received for the response.
    - `server_ttft_ms` / `server_ttfp_ms`: the server's own `response_request_metrics`
      values, when it sends them (see `server_request_metrics`).
    - `engine_tpot_ms` / `output_tokens`: the Stage-0 engine's `vllm_tpot_ms` and
      `num_tokens_out`, when the server reports stage metrics (see `engine_token_metrics`).
    """

    start_ms: float | None = None
    created_ms: float | None = None
    first_text_ms: float | None = None
    first_audio_ms: float | None = None
    last_audio_ms: float | None = None
    audio_ms: float | None = None
    server_ttft_ms: float | None = None
    server_ttfp_ms: float | None = None
    engine_tpot_ms: float | None = None
    output_tokens: int | None = None


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _non_negative(value: object) -> float | None:
    number = _finite(value)
    return number if number is not None and number >= 0 else None


def _positive(value: object) -> float | None:
    number = _finite(value)
    return number if number is not None and number > 0 else None


def _elapsed(origin: float | None, at: float | None) -> float | None:
    """`at - origin` when both are known and the result is a real, non-negative duration."""
    start, end = _finite(origin), _finite(at)
    if start is None or end is None or end < start:
        return None
    return end - start


def _rtf(origin: float | None, last_audio: float | None, audio_ms: float | None) -> float | None:
    generation = _elapsed(origin, last_audio)
    duration = _finite(audio_ms)
    if generation is None or duration is None or duration <= 0:
        return None
    return generation / duration


def _nearest_rank(ordered: Sequence[float], fraction: float) -> float:
    index = max(0, math.ceil(fraction * len(ordered)) - 1)
    return ordered[min(index, len(ordered) - 1)]


def summarize(
    values: Sequence[float | None], *, digits: int = _MS_DIGITS
) -> dict[str, float | None]:
    """Upstream's distribution summary: count, mean, nearest-rank p50 and p99 of finite values."""
    clean = sorted(v for v in (_finite(x) for x in values) if v is not None)
    if not clean:
        return {"count": 0, "mean": None, "p50": None, "p99": None}
    return {
        "count": len(clean),
        "mean": round(sum(clean) / len(clean), digits),
        "p50": round(_nearest_rank(clean, 0.50), digits),
        "p99": round(_nearest_rank(clean, 0.99), digits),
    }


def _stream_values(
    timings: Sequence[ResponseTiming], stream_start_ms: float
) -> tuple[float | None, float | None, float | None]:
    """Session-window TTFT, TTFP and RTF from the input stream's start (upstream `stream_*`)."""
    start = _finite(stream_start_ms)
    if start is None:
        return None, None, None

    def after_start(value: float | None) -> float | None:
        number = _finite(value)
        return number if number is not None and number >= start else None

    texts = [t for x in timings if (t := after_start(x.first_text_ms)) is not None]
    firsts = [t for x in timings if (t := after_start(x.first_audio_ms)) is not None]
    if not firsts:
        return None, None, None  # upstream reports no stream window without audio
    lasts = [t for x in timings if (t := after_start(x.last_audio_ms)) is not None]
    ttft = min(texts) - start if texts else None
    ttfp = min(firsts) - start
    rtf: float | None = None
    with_audio = [x for x in timings if x.first_audio_ms is not None]
    durations = [_finite(x.audio_ms) for x in with_audio]
    if lasts and all(d is not None for d in durations):
        total = sum(d for d in durations if d is not None)
        rtf = (max(lasts) - start) / total if total > 0 else None
    return ttft, ttfp, rtf


def duplex_session_metrics(
    timings: Sequence[ResponseTiming], *, stream_start_ms: float | None = None
) -> dict[str, dict[str, float | None]]:
    """One session's vLLM-Omni duplex metrics, each as `{count, mean, p50, p99}` (None: none).

    - `ttft_ms` / `ttfp_ms`: `start_ms` to the first text / audio delta (upstream's request-start
      definition, read on the client clock);
    - `server_ttft_ms` / `server_ttfp_ms`: the server-reported values (upstream's `ttft_ms` /
      `ttfp_ms` whenever the server sends them);
    - `client_ttft_ms` / `client_ttfp_ms`: `response.created` to the first text / audio delta;
    - `rtf`: `response.created` to the last audio delta, over the audio's duration;
    - `tpot_ms`: the Stage-0 engine's mean time per output token (positive values only);
    - `output_tokens`: Stage-0 output tokens per response, plus their `total`;
    - `stream_ttft_ms` / `stream_ttfp_ms` / `stream_rtf`: from `stream_start_ms` (the time the
      first input media was pushed) to the session's first text / first audio, and to its last
      audio over all the session's audio; one value per session, so count is 0 or 1.
    """
    audible = [t for t in timings if _finite(t.first_audio_ms) is not None]
    rows: dict[str, tuple[list[float | None], int]] = {
        "ttft_ms": ([_elapsed(t.start_ms, t.first_text_ms) for t in audible], _MS_DIGITS),
        "ttfp_ms": ([_elapsed(t.start_ms, t.first_audio_ms) for t in audible], _MS_DIGITS),
        "server_ttft_ms": ([_non_negative(t.server_ttft_ms) for t in audible], _MS_DIGITS),
        "server_ttfp_ms": ([_non_negative(t.server_ttfp_ms) for t in audible], _MS_DIGITS),
        "client_ttft_ms": ([_elapsed(t.created_ms, t.first_text_ms) for t in audible], _MS_DIGITS),
        "client_ttfp_ms": (
            [_elapsed(t.created_ms, t.first_audio_ms) for t in audible],
            _MS_DIGITS,
        ),
        "rtf": ([_rtf(t.created_ms, t.last_audio_ms, t.audio_ms) for t in audible], _RTF_DIGITS),
        "tpot_ms": ([_positive(t.engine_tpot_ms) for t in audible], _MS_DIGITS),
    }
    result = {name: summarize(values, digits=digits) for name, (values, digits) in rows.items()}

    tokens = [n for t in timings if (n := _non_negative(t.output_tokens)) is not None]
    result["output_tokens"] = {**summarize(tokens), "total": sum(tokens) if tokens else None}

    ttft, ttfp, rtf = (
        _stream_values(timings, stream_start_ms)
        if stream_start_ms is not None
        else (None, None, None)
    )
    result["stream_ttft_ms"] = summarize([ttft])
    result["stream_ttfp_ms"] = summarize([ttfp])
    result["stream_rtf"] = summarize([rtf], digits=_RTF_DIGITS)
    return result


# --- reading the server's own figures off raw wire objects ---


def _dicts(obj: Mapping[str, object]) -> Iterator[Mapping[str, object]]:
    """`obj` and the nested objects where vLLM-Omni puts its metric blocks."""
    for level in (obj, obj.get("response")):
        if not isinstance(level, Mapping):
            continue
        yield level
        for key in ("vllm_omni", "metadata"):
            inner = level.get(key)
            if isinstance(inner, Mapping):
                yield inner
                for sub in ("vllm_omni", "duplex_event"):
                    deeper = inner.get(sub)
                    if isinstance(deeper, Mapping):
                        yield deeper


def server_request_metrics(obj: Mapping[str, object]) -> tuple[float | None, float | None]:
    """The server's `(ttft_ms, ttfp_ms)`: `response_request_metrics` of a raw event or response."""
    ttft: float | None = None
    ttfp: float | None = None
    for level in _dicts(obj):
        block = level.get("response_request_metrics")
        if isinstance(block, Mapping):
            ttft = ttft if ttft is not None else _non_negative(block.get("ttft_ms"))
            ttfp = ttfp if ttfp is not None else _non_negative(block.get("ttfp_ms"))
    return ttft, ttfp


def engine_token_metrics(obj: Mapping[str, object]) -> tuple[float | None, int | None]:
    """The Stage-0 engine's `(vllm_tpot_ms, num_tokens_out)` from a raw event or response."""
    for level in _dicts(obj):
        stages = level.get("stage_metrics")
        stage0 = stages.get("0") if isinstance(stages, Mapping) else None
        if isinstance(stage0, Mapping):
            tpot = _positive(stage0.get("vllm_tpot_ms"))
            count = _non_negative(stage0.get("num_tokens_out"))
            return tpot, None if count is None else int(count)
    return None, None
