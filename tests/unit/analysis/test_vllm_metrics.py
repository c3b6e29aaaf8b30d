"""vLLM-Omni duplex session metrics from hand-built response timings."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duplex_client.analysis.vllm_metrics import (
    AGGREGATES,
    ResponseTiming,
    duplex_session_metrics,
    engine_token_metrics,
    server_request_metrics,
    summarize,
)

METRICS = {
    "ttft_ms",
    "ttfp_ms",
    "server_ttft_ms",
    "server_ttfp_ms",
    "client_ttft_ms",
    "client_ttfp_ms",
    "rtf",
    "tpot_ms",
    "output_tokens",
    "stream_ttft_ms",
    "stream_ttfp_ms",
    "stream_rtf",
}

# Two spoken responses with round gaps (ms on one clock).
FIRST = ResponseTiming(
    start_ms=1000,  # the append the server takes as the request start was sent
    created_ms=1400,
    first_text_ms=1450,
    first_audio_ms=1500,
    last_audio_ms=3500,
    audio_ms=4000,
)
SECOND = ResponseTiming(
    start_ms=5000,
    created_ms=5600,
    first_text_ms=5700,
    first_audio_ms=5900,
    last_audio_ms=6900,
    audio_ms=2000,
)


def reference_rank(values: list[float], fraction: float) -> float:
    """Nearest rank, from its definition: the least value with ceil(fraction * n) values <= it."""
    need = math.ceil(fraction * len(values))
    return min(v for v in values if sum(x <= v for x in values) >= need)


def test_each_latency_is_its_own_gap() -> None:
    m = duplex_session_metrics([FIRST, SECOND])
    # ttft: start -> first text; ttfp: start -> first audio.
    assert m["ttft_ms"] == {"count": 2, "mean": (450 + 700) / 2, "p50": 450, "p99": 700}
    assert m["ttfp_ms"] == {"count": 2, "mean": (500 + 900) / 2, "p50": 500, "p99": 900}
    # client_*: response.created -> first text / first audio.
    assert m["client_ttft_ms"] == {"count": 2, "mean": (50 + 100) / 2, "p50": 50, "p99": 100}
    assert m["client_ttfp_ms"] == {"count": 2, "mean": (100 + 300) / 2, "p50": 100, "p99": 300}


def test_rtf_is_created_to_last_audio_over_audio_duration() -> None:
    m = duplex_session_metrics([FIRST, SECOND])
    first, second = (3500 - 1400) / 4000, (6900 - 5600) / 2000  # 0.525, 0.65
    assert m["rtf"] == {"count": 2, "mean": (first + second) / 2, "p50": first, "p99": second}


def test_rtf_uses_last_audio_packet_not_the_first() -> None:
    only = dataclasses.replace(FIRST, last_audio_ms=FIRST.first_audio_ms)
    assert duplex_session_metrics([only])["rtf"]["mean"] == (1500 - 1400) / 4000


def test_empty_input_measures_nothing() -> None:
    m = duplex_session_metrics([])
    assert set(m) == METRICS
    for name, summary in m.items():
        assert summary["count"] == 0, name
        assert [summary[k] for k in AGGREGATES[1:]] == [None, None, None], name
    assert m["output_tokens"]["total"] is None


def test_every_metric_reports_upstreams_aggregates() -> None:
    m = duplex_session_metrics([FIRST], stream_start_ms=0)
    for name, summary in m.items():
        expected = {*AGGREGATES, "total"} if name == "output_tokens" else set(AGGREGATES)
        assert set(summary) == expected, name
    assert AGGREGATES == ("count", "mean", "p50", "p99")


def test_a_response_without_audio_adds_nothing_to_latency_or_rtf() -> None:
    text_only = ResponseTiming(
        start_ms=100, created_ms=150, first_text_ms=200, engine_tpot_ms=30, output_tokens=7
    )
    m = duplex_session_metrics([dataclasses.replace(FIRST, engine_tpot_ms=20), text_only])
    for name in ("ttft_ms", "ttfp_ms", "client_ttft_ms", "client_ttfp_ms", "rtf", "tpot_ms"):
        assert m[name]["count"] == 1, name
    assert (m["ttft_ms"]["mean"], m["tpot_ms"]["mean"]) == (450, 20)
    # Its engine tokens still count, as upstream sums them over every response.
    assert m["output_tokens"] == {"count": 1, "mean": 7, "p50": 7, "p99": 7, "total": 7}


def test_missing_fields_leave_their_metrics_out() -> None:
    no_start = dataclasses.replace(FIRST, start_ms=None)
    no_text = dataclasses.replace(SECOND, first_text_ms=None)
    m = duplex_session_metrics([no_start, no_text])
    assert m["ttft_ms"] == {"count": 0, "mean": None, "p50": None, "p99": None}  # neither has both
    assert m["ttfp_ms"]["count"] == 1 and m["ttfp_ms"]["mean"] == 900
    assert m["client_ttft_ms"]["count"] == 1 and m["client_ttft_ms"]["mean"] == 50
    assert m["client_ttfp_ms"]["count"] == 2


@pytest.mark.parametrize(
    "change",
    [
        {"created_ms": None},
        {"last_audio_ms": None},
        {"audio_ms": None},
        {"audio_ms": 0},
        {"last_audio_ms": 1300},  # before response.created: a wrong reference point
    ],
)
def test_rtf_needs_its_three_observations(change: dict[str, float | None]) -> None:
    assert duplex_session_metrics([dataclasses.replace(FIRST, **change)])["rtf"]["count"] == 0


def test_a_negative_latency_is_left_out_not_clamped() -> None:
    late_start = dataclasses.replace(FIRST, start_ms=1480)  # after the first text (1450)
    m = duplex_session_metrics([late_start])
    assert m["ttft_ms"]["count"] == 0
    assert m["ttfp_ms"]["mean"] == 20


def test_server_values_are_reported_as_given() -> None:
    a = dataclasses.replace(FIRST, server_ttft_ms=120.0, server_ttfp_ms=180.0)
    b = dataclasses.replace(SECOND, server_ttft_ms=80.0, server_ttfp_ms=math.nan)
    c = dataclasses.replace(FIRST, server_ttft_ms=-5.0)
    m = duplex_session_metrics([a, b, c])
    assert m["server_ttft_ms"] == {"count": 2, "mean": 100.0, "p50": 80.0, "p99": 120.0}
    assert m["server_ttfp_ms"] == {"count": 1, "mean": 180.0, "p50": 180.0, "p99": 180.0}
    # The client-side figures stay their own metric.
    assert m["ttft_ms"]["count"] == 3


def test_tpot_is_the_engines_and_only_positive() -> None:
    rows = [
        dataclasses.replace(FIRST, engine_tpot_ms=40.0, output_tokens=20),
        dataclasses.replace(SECOND, engine_tpot_ms=0.0, output_tokens=10),
        dataclasses.replace(FIRST, engine_tpot_ms=None, output_tokens=None),
    ]
    m = duplex_session_metrics(rows)
    assert m["tpot_ms"] == {"count": 1, "mean": 40.0, "p50": 40.0, "p99": 40.0}
    assert m["output_tokens"]["total"] == 30 and m["output_tokens"]["count"] == 2


def test_stream_window_from_the_input_start() -> None:
    m = duplex_session_metrics([FIRST, SECOND], stream_start_ms=200)
    # First text anywhere 1450, first audio 1500, last audio 6900, all audio 6000 ms.
    assert m["stream_ttft_ms"] == {"count": 1, "mean": 1250, "p50": 1250, "p99": 1250}
    assert m["stream_ttfp_ms"]["mean"] == 1300
    assert m["stream_rtf"]["mean"] == round((6900 - 200) / 6000, 6)


def test_stream_window_needs_a_start_and_some_audio() -> None:
    assert duplex_session_metrics([FIRST])["stream_ttfp_ms"]["count"] == 0
    text_only = ResponseTiming(first_text_ms=500)
    m = duplex_session_metrics([text_only], stream_start_ms=0)
    assert [m[k]["count"] for k in ("stream_ttft_ms", "stream_ttfp_ms", "stream_rtf")] == [0, 0, 0]


def test_stream_rtf_is_unknown_when_an_audible_response_lacks_its_duration() -> None:
    m = duplex_session_metrics(
        [FIRST, dataclasses.replace(SECOND, audio_ms=None)], stream_start_ms=0
    )
    assert m["stream_rtf"]["count"] == 0
    assert m["stream_ttfp_ms"]["mean"] == 1500


def test_stream_ignores_output_before_the_stream_started() -> None:
    early_text = dataclasses.replace(FIRST, first_text_ms=100)
    m = duplex_session_metrics([early_text, SECOND], stream_start_ms=1000)
    assert m["stream_ttft_ms"]["mean"] == 5700 - 1000


def test_percentiles_are_nearest_rank() -> None:
    assert summarize([30.0, 10.0, 20.0]) == {"count": 3, "mean": 20.0, "p50": 20.0, "p99": 30.0}
    hundred = [float(v) for v in range(1, 101)]
    assert (summarize(hundred)["p50"], summarize(hundred)["p99"]) == (50.0, 99.0)


@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=60))
def test_percentiles_match_the_definition(values: list[float]) -> None:
    summary = summarize(values, digits=9)
    assert summary["count"] == len(values)
    assert summary["p50"] == round(reference_rank(values, 0.50), 9)
    assert summary["p99"] == round(reference_rank(values, 0.99), 9)


def test_summaries_drop_non_finite_values_and_round() -> None:
    assert summarize([None, math.inf, math.nan, 1 / 3]) == {
        "count": 1,
        "mean": 0.333,
        "p50": 0.333,
        "p99": 0.333,
    }
    third = dataclasses.replace(FIRST, created_ms=0, last_audio_ms=1000, audio_ms=3000)
    assert duplex_session_metrics([third])["rtf"]["mean"] == 0.333333


def test_timings_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        FIRST.start_ms = 0  # type: ignore[misc]


def test_server_request_metrics_found_where_vllm_omni_puts_them() -> None:
    block = {"ttft_ms": 125.0, "ttfp_ms": 175.0, "source": "server_monotonic_request_start"}
    delta = {
        "type": "response.output_audio.delta",
        "metadata": {"vllm_omni": {"response_request_metrics": block}},
    }
    created = {
        "type": "response.created",
        "response": {"metadata": {"duplex_event": {"response_request_metrics": block}}},
    }
    done_response = {"id": "r1", "response_request_metrics": {"ttft_ms": 90}}
    assert server_request_metrics(delta) == (125.0, 175.0)
    assert server_request_metrics(created) == (125.0, 175.0)
    assert server_request_metrics(done_response) == (90.0, None)
    assert server_request_metrics({"id": "r1", "status": "completed"}) == (None, None)


def test_engine_token_metrics_read_stage_zero() -> None:
    stages = {"0": {"vllm_tpot_ms": 12.5, "num_tokens_out": 40}, "1": {"vllm_tpot_ms": 99.0}}
    response = {"id": "r1", "metadata": {"vllm_omni": {"stage_metrics": stages}}}
    assert engine_token_metrics(response) == (12.5, 40)
    assert engine_token_metrics({"response": response}) == (12.5, 40)
    zero = {"metadata": {"stage_metrics": {"0": {"vllm_tpot_ms": 0, "num_tokens_out": 3}}}}
    assert engine_token_metrics(zero) == (None, 3)
    assert engine_token_metrics({"usage": {"output_tokens": 5}}) == (None, None)
