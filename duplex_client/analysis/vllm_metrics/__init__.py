"""vLLM-Omni's duplex session metrics (TTFT, TTFP, RTF, TPOT) of a run, and our own beside them.

Under upstream's names (`ttft_ms`, `ttfp_ms`, `rtf`, `tpot_ms`, `audio_turn_count`,
`output_tokens`, `stream_ttft_ms`, `stream_ttfp_ms`, `stream_rtf`) the values are vLLM-Omni
0.30.0's, computed from the run's received events as 0.30.0 computes them (`upstream`); our
own figures, measured from other reference points, have names of their own (`ours`).
docs/metrics.md says what each one measures and which upstream file it follows.

Pure code: no clock, no I/O. Pass every time in ms on one clock (the media clock).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duplex_client.analysis.vllm_metrics.observed import Observed, observe
from duplex_client.analysis.vllm_metrics.ours import (
    ResponseTiming,
    our_metrics,
    server_request_metrics,
)
from duplex_client.analysis.vllm_metrics.summary import AGGREGATES, summarize
from duplex_client.analysis.vllm_metrics.upstream import Timed, UpstreamSession, upstream_metrics

__all__ = [
    "AGGREGATES",
    "Observed",
    "ResponseTiming",
    "Timed",
    "UpstreamSession",
    "duplex_session_metrics",
    "observe",
    "our_metrics",
    "server_request_metrics",
    "summarize",
    "upstream_metrics",
]


def duplex_session_metrics(
    timings: Sequence[ResponseTiming],
    events: Sequence[Timed],
    *,
    stream_start_ms: float = 0.0,
) -> dict[str, Any]:
    """One session's `vllm_omni` metrics: upstream's from `events` (every received event's
    time and record, in arrival order), then ours from `timings` (the spoken responses).

    `stream_start_ms`: when the first input media was pushed (upstream's `stream_start`).
    """
    return {
        **upstream_metrics(events, stream_start_ms=stream_start_ms),
        **our_metrics(timings),
    }
