"""`RunResult.turns_frame()`: a DataFrame with pandas, a clear ImportError without it."""

from __future__ import annotations

import sys

import pytest

from duplex_client.analysis.turns import Turn
from duplex_client.run.result import TURN_COLUMNS, RunResult


def turn(rid: str, latency: float | None) -> Turn:
    return Turn(
        rid, 1, 10.0, 11.0, 20.0, 520.0, 500.0, 500.0, None, 0.0, "annotation", latency, 5.0, "hi"
    )


def test_the_turns_table_as_a_dataframe() -> None:
    result = RunResult(ok=True, status="ok", exit_code=0, turns=[turn("a", 20.0), turn("b", None)])
    frame = result.turns_frame()
    assert list(frame.columns) == list(TURN_COLUMNS)
    assert frame["response_id"].tolist() == ["a", "b"]
    assert frame["latency_ms"].iloc[0] == 20.0 and frame["latency_ms"].isna().iloc[1]
    assert list(TURN_COLUMNS) == list(turn("x", 1.0).to_dict())  # one order everywhere


def test_without_pandas_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"duplex-client\[notebook\]"):
        RunResult(ok=True, status="ok", exit_code=0, turns=[]).turns_frame()


def test_to_dict_keeps_heard_time_out_without_a_listener_clock() -> None:
    realtime = RunResult(ok=True, status="ok", exit_code=0, turns=[turn("a", 1.0)], metrics={})
    assert realtime.to_dict()["turns"][0]["response_id"] == "a"
    asap = RunResult(ok=True, status="ok", exit_code=0, timing="not_realtime")
    doc = asap.to_dict()
    assert doc["timing"] == "not_realtime" and "turns" not in doc and "metrics" not in doc
    assert "heard.wav" in doc["omitted"] and doc["omitted_reason"]
