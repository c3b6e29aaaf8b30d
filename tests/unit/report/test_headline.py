"""The headline latency of the CLI summary and the report header: first answers first."""

from __future__ import annotations

from duplex_cli.display import heard_latency

from duplex_client.report.run_page import headline_latency
from duplex_client.run.result import RunResult

METRICS = {
    "user_end_source": "annotation",
    "latency_ms": {"count": 2, "p50": 3050.0, "p95": 5000.0, "max": 5200.0},
    "first_answer_latency_ms": {"count": 1, "p50": 900.0, "p95": 900.0, "max": 900.0},
    "follow_up_latency_ms": {"count": 1, "p50": 5200.0, "p95": 5200.0, "max": 5200.0},
    "unanswered_turns": 0,
}


def test_the_summary_headlines_the_first_answer_and_lists_follow_ups_apart() -> None:
    result = RunResult(ok=True, status="ok", exit_code=0, metrics=METRICS, turns=[])
    line = heard_latency(result)
    assert line.startswith("first answer p50 900.0 ms, max 900.0 ms (1 user turn(s) answered")
    assert "1 follow-up answer(s) p50 5200.0 ms" in line
    assert "3050" not in line  # the pooled p50 is not shown as the headline


def test_the_report_header_headlines_the_first_answer() -> None:
    text = headline_latency(METRICS)
    assert text.startswith("first-answer latency p50 900.0 ms")
    assert "follow-up answers: 1, p50 5200.0 ms" in text
    assert headline_latency({}) == "first-answer latency p50 – ms"
