"""The report's turn table marks function-call rows."""

from __future__ import annotations

from duplex_client.report.run_view import _turn


def test_a_function_call_row_is_labelled() -> None:
    row = {"response_id": "r", "transcript": "get_time({}) -> 12:00", "kind": "function_call"}
    assert _turn(1, row).transcript == "function call: get_time({}) -> 12:00"
    assert _turn(2, {**row, "kind": "response"}).transcript == "get_time({}) -> 12:00"
    assert _turn(3, {"response_id": "r", "transcript": "hi"}).transcript == "hi"
