"""vLLM-Omni 0.30.0's metrics from hand-built events: each rule, then random sessions checked
against the tests' independent restatement of upstream (`tests/support/upstream_metrics.py`)."""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from duplex_client.analysis.vllm_metrics import Observed, Timed, observe, upstream_metrics
from tests.support.upstream_metrics import session_metrics

EMPTY = {"count": 0, "mean": None, "p50": None, "p99": None}
DISTRIBUTIONS = (
    "ttft_ms",
    "ttfp_ms",
    "rtf",
    "tpot_ms",
    "stream_ttft_ms",
    "stream_ttfp_ms",
    "stream_rtf",
)


def created(rid: str) -> dict[str, Any]:
    return {"type": "response.created", "response": {"id": rid, "status": "in_progress"}}


def audio(rid: str, n: int = 4800, *, duration: Any = None, rate: int | None = None) -> dict:
    event: dict[str, Any] = {
        "type": "response.output_audio.delta",
        "response_id": rid,
        "delta": base64.b64encode(bytes(n)).decode(),
    }
    if duration is not None:
        event["metadata"] = {"audio_duration_ms": duration}
    if rate is not None:
        event["sample_rate_hz"] = rate
    return event


def text(rid: str, delta: str = "hi") -> dict[str, Any]:
    return {"type": "response.output_audio_transcript.delta", "response_id": rid, "delta": delta}


def done(rid: str, **metadata: Any) -> dict[str, Any]:
    return {"type": "response.done", "response": {"id": rid, "metadata": metadata}}


def timed(*pairs: tuple[float | None, dict[str, Any]]) -> list[Timed]:
    out: list[Timed] = []
    for at, raw in pairs:
        seen = observe(raw)
        if seen is not None:
            out.append((at, seen))
    return out


def metrics(*pairs: tuple[float | None, dict[str, Any]], start: float = 0.0) -> dict[str, Any]:
    return upstream_metrics(timed(*pairs), stream_start_ms=start)


# --- reading one event ---


def test_observe_reads_what_upstream_reads() -> None:
    seen = observe(audio("r1", 3, duration=125, rate=16000))
    assert seen == Observed(
        type="response.output_audio.delta",
        response_id="r1",
        audio=True,
        audio_bytes=3,
        duration_ms=125,
        sample_rate_hz=16000,
    )
    assert observe({"type": "response.output_audio.delta", "response_id": "r", "audio": "AAAA"})
    assert observe(text("r1")) == Observed(type=text("r1")["type"], response_id="r1", text=True)
    # Nothing upstream reads: an empty text, the beta audio name, no response, no figures.
    assert observe(text("r1", "")) is None
    assert observe({"type": "response.audio.delta", "response_id": "r1", "delta": "AAAA"}) is None
    assert observe({"type": "session.updated"}) is None
    assert observe({"type": "response.output_item.added", "response_id": "r1"}) is None


def test_the_servers_blocks_are_found_where_upstream_looks_first() -> None:
    direct = {"ttft_ms": 1.0}
    nested = {"ttft_ms": 2.0}
    event = {
        "type": "response.speak",
        "response_id": "r1",
        "response_request_metrics": direct,
        "vllm_omni": {"response_request_metrics": nested, "stage_metrics": {"0": {}}},
    }
    seen = observe(event)
    assert seen is not None and seen.request_metrics == direct
    assert seen.stage_metrics == {"0": {}}
    in_done = observe(done("r1", duplex_event={"response_request_metrics": nested}))
    assert in_done is not None and in_done.request_metrics == nested
    # Stage metrics are not looked for under `duplex_event`: nothing there is read.
    hidden = observe(done("r1", duplex_event={"stage_metrics": {"0": {}}}))
    assert hidden is None


# --- the rules ---


def test_without_server_figures_latency_starts_at_response_created() -> None:
    m = metrics(
        (1000.0, created("r1")),
        (1002.5, audio("r1", duration=100)),
        (1003.25, text("r1")),
        (1100.0, audio("r1", duration=200)),
    )
    assert m["ttfp_ms"] == {"count": 1, "mean": 2.5, "p50": 2.5, "p99": 2.5}
    assert m["ttft_ms"]["mean"] == 3.25
    assert m["rtf"]["mean"] == round(100 / 200, 6)  # created -> last audio over 200 ms
    assert m["audio_turn_count"] == 1


def test_server_figures_win_and_later_blocks_replace_earlier_ones() -> None:
    m = metrics(
        (1000.0, {**created("r1"), "response_request_metrics": {"ttft_ms": 50.0}}),
        (1001.0, audio("r1", duration=100)),
        (1002.0, text("r1")),
        (1200.0, done("r1", response_request_metrics={"ttft_ms": 40.0, "ttfp_ms": 30.0})),
    )
    assert (m["ttft_ms"]["mean"], m["ttfp_ms"]["mean"]) == (40.0, 30.0)


def test_a_negative_server_figure_falls_back_to_the_clients() -> None:
    m = metrics(
        (1000.0, created("r1")),
        (1004.0, audio("r1", duration=100)),
        (1005.0, done("r1", response_request_metrics={"ttfp_ms": -1})),
    )
    assert m["ttfp_ms"]["mean"] == 4.0


def test_audio_duration_is_the_servers_else_the_bytes_at_the_last_named_rate() -> None:
    reported = metrics(
        (0.0, created("r1")), (10.0, audio("r1", 4800, duration=99)), (60.0, audio("r1", 4800))
    )
    assert reported["rtf"]["mean"] == round(60 / 99, 6)
    at_24k = metrics((0.0, created("r1")), (60.0, audio("r1", 9600)))  # 200 ms at 24 kHz
    assert at_24k["rtf"]["mean"] == round(60 / 200, 6)
    at_16k = metrics((0.0, created("r1")), (60.0, audio("r1", 9600, rate=16000)))
    assert at_16k["rtf"]["mean"] == round(60 / 300, 6)


def test_a_response_without_audio_has_no_latency_row() -> None:
    m = metrics((0.0, created("r1")), (5.0, text("r1")), (9.0, done("r1")))
    assert m["audio_turn_count"] == 0 and m["ttft_ms"] == EMPTY
    # The session window still starts its text there, but without audio it has no window.
    assert m["stream_ttft_ms"] == EMPTY


def test_stage_metrics_make_a_row_tokens_and_tpot() -> None:
    text_stage = {"final_output_type": "text", "num_tokens_out": 12, "vllm_tpot_ms": 25.0}
    audio_stage = {"final_output_type": "audio", "num_tokens_out": 99}
    m = metrics(
        (0.0, created("r1")),
        (5.0, audio("r1", duration=40)),
        (9.0, done("r1", vllm_omni={"stage_metrics": {"0": text_stage}})),
        (20.0, created("r2")),
        (29.0, done("r2", stage_metrics={"0": {**text_stage, "vllm_tpot_ms": 0.0}})),
        (30.0, created("r3")),
        (31.0, audio("r3", duration=40)),
        (39.0, done("r3", stage_metrics={"0": audio_stage})),
    )
    assert m["audio_turn_count"] == 3  # r2 has a row for its stage metrics alone
    assert m["ttfp_ms"]["count"] == 2
    assert m["tpot_ms"] == {"count": 1, "mean": 25.0, "p50": 25.0, "p99": 25.0}
    assert m["output_tokens"]["total"] == 24  # the audio stage's block counts no tokens


def test_only_events_from_the_stream_start_on_count() -> None:
    m = metrics(
        (-50.0, created("r0")),
        (-40.0, audio("r0", 4800)),
        (10.0, audio("r0", 4800)),
        (None, created("r1")),  # no media time: before the stream
        (100.0, created("r2")),
        (150.0, text("r2")),
        (200.0, audio("r2", 4800)),
        (300.0, {"type": "response.output_audio.delta", "response_id": "rX", "delta": "AAAA"}),
    )
    assert m["audio_turn_count"] == 1 and m["ttfp_ms"]["mean"] == 100.0  # r0 has no created
    # The window: text at 150, audio 10..200 of created responses (rX never was), and the
    # duration of all their audio whatever its time (r0: 200 ms, r1: none, r2: 100 ms).
    assert m["stream_ttft_ms"]["mean"] == 150.0 and m["stream_ttfp_ms"]["mean"] == 10.0
    assert m["stream_rtf"]["mean"] == round(200 / 300, 6)


# --- random sessions against the restatement ---

RIDS = ("r1", "r2", "r3")
numbers = st.one_of(
    st.none(),
    st.integers(-50, 3000),
    st.floats(-50, 3000, allow_nan=False),
    st.just(True),
)


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    rid = draw(st.sampled_from(RIDS))
    where = draw(st.sampled_from(("id", "response")))
    ident = {"response_id": rid} if where == "id" else {"response": {"id": rid}}
    kind = draw(
        st.sampled_from(
            (
                "response.created",
                "response.output_audio.delta",
                "response.audio.delta",
                "response.output_audio_transcript.delta",
                "response.text.delta",
                "response.done",
            )
        )
    )
    event: dict[str, Any] = {"type": kind, **ident}
    if kind.endswith("audio.delta"):
        size = draw(st.integers(0, 30))
        event["delta"] = base64.b64encode(bytes(size)).decode()
        duration = draw(numbers)
        if duration is not None:
            event["metadata"] = {"audio_duration_ms": duration}
        if draw(st.booleans()):
            event["sample_rate_hz"] = draw(st.sampled_from((8000, 16000, 24000)))
    elif kind.endswith(".delta"):
        event["delta"] = draw(st.sampled_from(("", "hi")))
    if draw(st.integers(0, 4)) == 0:
        block = {"ttft_ms": draw(numbers), "ttfp_ms": draw(numbers)}
        event.setdefault("metadata", {})["response_request_metrics"] = block
    if draw(st.integers(0, 4)) == 0:
        stage = {
            "final_output_type": draw(st.sampled_from(("text", "audio", None))),
            "num_tokens_out": draw(st.integers(0, 50)),
            "vllm_tpot_ms": draw(numbers),
        }
        event["vllm_omni"] = {"stage_metrics": {"0": stage}}
    return event


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.one_of(st.none(), st.floats(-200, 5000, allow_nan=False)), events()),
        max_size=25,
    ),
    st.sampled_from((0.0, 100.0)),
)
def test_random_sessions_match_the_restatement(
    lines: list[tuple[float | None, dict[str, Any]]], start: float
) -> None:
    ordered = sorted(lines, key=lambda line: -1e9 if line[0] is None else line[0])
    ours = metrics(*ordered, start=start)
    upstream = session_metrics([{"media_ms": t, "event": e} for t, e in ordered], start)
    for name in DISTRIBUTIONS:
        assert ours[name] == (upstream[name] or EMPTY), name
    assert ours["audio_turn_count"] == upstream["audio_turn_count"]
    assert ours["output_tokens"]["total"] == upstream["output_tokens"]
