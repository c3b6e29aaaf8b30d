"""Our own TTFT/TTFP figures beside upstream's: from the request start, the server's, the client's.

Upstream's `ttft_ms`/`ttfp_ms` mix sources (the server's values when it sends them, else
`response.created` on the client); these keep each source apart, under names of their own:

- `request_ttft_ms` / `request_ttfp_ms`: from the send of the input append the server takes as
  this response's request start, to the first text / audio delta, on the client clock;
- `server_ttft_ms` / `server_ttfp_ms`: the server's own `response_request_metrics`, as given;
- `client_ttft_ms` / `client_ttfp_ms`: from the receipt of `response.created`.

A response counts when it produced audio (as upstream's rows); a figure that comes out
negative (a reference point after the output) is left out, since it means the inputs are
wrong. Pure code: pass every time in ms on one clock (the media clock).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from duplex_client.analysis.vllm_metrics.summary import finite, non_negative, summarize


@dataclass(frozen=True, slots=True)
class ResponseTiming:
    """What the client observed of one spoken response, in ms on one clock (None: not seen).

    - `start_ms`: the send time of the input append whose acceptance the server takes as the
      request start for this response (the latest append accepted for the response's model
      turn before the response began);
    - `created_ms`: the receive time of the response's `response.created`;
    - `first_text_ms` / `first_audio_ms`: the receive times of the first non-empty text or
      transcript delta and of the first non-empty audio delta;
    - `server_ttft_ms` / `server_ttfp_ms`: the server's `response_request_metrics` values,
      when it sends them (see `server_request_metrics`).
    """

    start_ms: float | None = None
    created_ms: float | None = None
    first_text_ms: float | None = None
    first_audio_ms: float | None = None
    server_ttft_ms: float | None = None
    server_ttfp_ms: float | None = None


def _elapsed(origin: float | None, at: float | None) -> float | None:
    """`at - origin` when both are known and the result is a real, non-negative duration."""
    start, end = finite(origin), finite(at)
    if start is None or end is None or end < start:
        return None
    return end - start


def our_metrics(timings: Sequence[ResponseTiming]) -> dict[str, dict[str, float | None]]:
    """Our per-source TTFT/TTFP of one session, each as `{count, mean, p50, p99}`."""
    audible = [t for t in timings if finite(t.first_audio_ms) is not None]
    return {
        "request_ttft_ms": summarize([_elapsed(t.start_ms, t.first_text_ms) for t in audible]),
        "request_ttfp_ms": summarize([_elapsed(t.start_ms, t.first_audio_ms) for t in audible]),
        "server_ttft_ms": summarize([non_negative(t.server_ttft_ms) for t in audible]),
        "server_ttfp_ms": summarize([non_negative(t.server_ttfp_ms) for t in audible]),
        "client_ttft_ms": summarize([_elapsed(t.created_ms, t.first_text_ms) for t in audible]),
        "client_ttfp_ms": summarize([_elapsed(t.created_ms, t.first_audio_ms) for t in audible]),
    }


def _dicts(obj: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
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


def server_request_metrics(obj: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """The server's `(ttft_ms, ttfp_ms)`: `response_request_metrics` of a raw event or response."""
    ttft: float | None = None
    ttfp: float | None = None
    for level in _dicts(obj):
        block = level.get("response_request_metrics")
        if isinstance(block, Mapping):
            ttft = ttft if ttft is not None else non_negative(block.get("ttft_ms"))
            ttfp = ttfp if ttfp is not None else non_negative(block.get("ttfp_ms"))
    return ttft, ttfp
