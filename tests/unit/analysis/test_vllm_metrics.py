"""Our own TTFT/TTFP figures (request start, server, client) and the summaries' number rules."""

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
    our_metrics,
    server_request_metrics,
    summarize,
)

UPSTREAM_NAMES = {
    "audio_turn_count",
    "ttft_ms",
    "ttfp_ms",
    "rtf",
    "tpot_ms",
    "output_tokens",
    "stream_ttft_ms",
    "stream_ttfp_ms",
    "stream_rtf",
}
OUR_NAMES = {
    "request_ttft_ms",
    "request_ttfp_ms",
    "server_ttft_ms",
    "server_ttfp_ms",
    "client_ttft_ms",
    "client_ttfp_ms",
}

# Two spoken responses with round gaps (ms on one clock).
FIRST = ResponseTiming(
    start_ms=1000,  # the append the server takes as the request start was sent
    created_ms=1400,
    first_text_ms=1450,
    first_audio_ms=1500,
)
SECOND = ResponseTiming(start_ms=5000, created_ms=5600, first_text_ms=5700, first_audio_ms=5900)


def reference_rank(values: list[float], fraction: float) -> float:
    """Nearest rank, from its definition: the least value with ceil(fraction * n) values <= it."""
    need = math.ceil(fraction * len(values))
    return min(v for v in values if sum(x <= v for x in values) >= need)


def test_each_latency_is_its_own_gap() -> None:
    m = our_metrics([FIRST, SECOND])
    # request_*: the request start's append -> first text / first audio.
    assert m["request_ttft_ms"] == {"count": 2, "mean": (450 + 700) / 2, "p50": 450, "p99": 700}
    assert m["request_ttfp_ms"] == {"count": 2, "mean": (500 + 900) / 2, "p50": 500, "p99": 900}
    # client_*: response.created -> first text / first audio.
    assert m["client_ttft_ms"] == {"count": 2, "mean": (50 + 100) / 2, "p50": 50, "p99": 100}
    assert m["client_ttfp_ms"] == {"count": 2, "mean": (100 + 300) / 2, "p50": 100, "p99": 300}


def test_the_session_block_has_upstreams_names_then_ours() -> None:
    m = duplex_session_metrics([FIRST], [])
    assert set(m) == UPSTREAM_NAMES | OUR_NAMES
    assert list(m)[: len(UPSTREAM_NAMES)] == [n for n in m if n in UPSTREAM_NAMES]
    assert m["request_ttft_ms"]["count"] == 1 and m["ttft_ms"]["count"] == 0  # no events


def test_empty_input_measures_nothing() -> None:
    m = duplex_session_metrics([], [])
    for name, summary in m.items():
        if name == "audio_turn_count":
            assert summary == 0
            continue
        assert summary["count"] == 0, name
        assert [summary[k] for k in AGGREGATES[1:]] == [None, None, None], name
    assert m["output_tokens"]["total"] == 0  # upstream's sum over no rows


def test_every_distribution_reports_upstreams_aggregates() -> None:
    m = duplex_session_metrics([FIRST], [])
    for name, summary in m.items():
        if name == "audio_turn_count":
            continue
        expected = {*AGGREGATES, "total"} if name == "output_tokens" else set(AGGREGATES)
        assert set(summary) == expected, name
    assert AGGREGATES == ("count", "mean", "p50", "p99")


def test_a_response_without_audio_adds_nothing() -> None:
    text_only = ResponseTiming(start_ms=100, created_ms=150, first_text_ms=200)
    m = our_metrics([FIRST, text_only])
    for name in OUR_NAMES - {"server_ttft_ms", "server_ttfp_ms"}:
        assert m[name]["count"] == 1, name


def test_missing_fields_leave_their_metrics_out() -> None:
    no_start = dataclasses.replace(FIRST, start_ms=None)
    no_text = dataclasses.replace(SECOND, first_text_ms=None)
    m = our_metrics([no_start, no_text])
    assert m["request_ttft_ms"] == {"count": 0, "mean": None, "p50": None, "p99": None}
    assert m["request_ttfp_ms"]["count"] == 1 and m["request_ttfp_ms"]["mean"] == 900
    assert m["client_ttft_ms"]["count"] == 1 and m["client_ttft_ms"]["mean"] == 50
    assert m["client_ttfp_ms"]["count"] == 2


def test_a_negative_latency_is_left_out_not_clamped() -> None:
    late_start = dataclasses.replace(FIRST, start_ms=1480)  # after the first text (1450)
    m = our_metrics([late_start])
    assert m["request_ttft_ms"]["count"] == 0
    assert m["request_ttfp_ms"]["mean"] == 20


def test_server_values_are_reported_as_given() -> None:
    a = dataclasses.replace(FIRST, server_ttft_ms=120.0, server_ttfp_ms=180.0)
    b = dataclasses.replace(SECOND, server_ttft_ms=80.0, server_ttfp_ms=math.nan)
    c = dataclasses.replace(FIRST, server_ttft_ms=-5.0)
    m = our_metrics([a, b, c])
    assert m["server_ttft_ms"] == {"count": 2, "mean": 100.0, "p50": 80.0, "p99": 120.0}
    assert m["server_ttfp_ms"] == {"count": 1, "mean": 180.0, "p50": 180.0, "p99": 180.0}
    # The client-side figures stay their own metric.
    assert m["request_ttft_ms"]["count"] == 3


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
    assert summarize([1 / 3], digits=6)["mean"] == 0.333333


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
