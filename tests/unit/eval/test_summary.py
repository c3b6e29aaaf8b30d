"""The eval summary: rows, timing validity, the pooled aggregate and the three summary files."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path
from typing import Any

import pytest

from duplex_client.eval.summary import (
    SUMMARY_COLUMNS,
    EvalSummary,
    ItemRecord,
    normalise_error,
    percentiles,
    summary_row,
)


def turn(latency: float | None, server: float | None, **kw: Any) -> dict[str, Any]:
    """A `result.json` → `turns` row (shape of a real bundle, plus the lead's new fields)."""
    row: dict[str, Any] = {
        "response_id": "resp_87e77865bba11fb0179ce02b1aa56a81",
        "unit_index": 3,
        "decided_ms": 4023.87,
        "first_audio_ms": 4024.172,
        "heard_start_ms": 4024.542,
        "heard_end_ms": 8341.917,
        "heard_ms": 4317.375,
        "received_ms": 4317.375,
        "cut": None,
        "user_end_ms": 3424.0,
        "user_end_source": "vad",
        "latency_ms": latency,
        "server_ms": server,
        "transcript": "I see blue.",
        "overlap_ms": 0.0,
        "gap_ms": latency,
    }
    row.update(kw)
    return row


def result(
    *,
    ok: bool = True,
    p99: float | None = 9.169,
    timing: str = "realtime",
    turns: list[dict[str, Any]] | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """A `result.json` document shaped like the one `stream` writes."""
    doc: dict[str, Any] = {
        "ok": ok,
        "status": "ok" if ok else "failed",
        "exit_code": 0 if ok else 1,
        "error": error,
        "session_id": "duplex-8c0d44873eff1596eda8d26d2d0bd4a1",
        "duration_s": 12.971,
        "counts": {"appends": 35},
        "lateness_ms": None if p99 is None else {"p50": 0.842, "p99": p99, "max": p99 + 1},
        "transcript": "You said: hello.\nI see blue.",
        "timing": timing,
        "warnings": [],
    }
    if timing != "realtime":
        doc["omitted"] = ["turns", "metrics"]
        return doc
    doc["turns"] = [turn(600.0, 220.0), turn(5000.0, 20.0)] if turns is None else turns
    doc["metrics"] = {
        "turns": len(doc["turns"]),
        "latency_ms": {"count": 2, "p50": 2759.229, "p95": 4702.048, "max": 4917.917},
        "first_answer_latency_ms": {"count": 1, "p50": 600.542, "p95": 600.542, "max": 600.5},
        "server_ms": {"count": 2, "p50": 118.966, "p95": 212.374, "max": 222.753},
        "overlap_ms": {"count": 2, "p50": 0.0, "p95": 0.0, "max": 0.0},
        "gap_ms": {"count": 2, "p50": 600.542, "p95": 600.542, "max": 600.542},
        "unanswered_turns": 0,
        "cut_turns": 1,
    }
    return doc


def record(
    item_id: str = "a",
    res: dict[str, Any] | None = None,
    *,
    drift: float | None = 0.5,
    endpoint: str | None = "ws://h1:8000/v1/realtime",
    extra: dict[str, Any] | None = None,
    repeat: int | None = None,
) -> ItemRecord:
    return ItemRecord(
        id=item_id,
        repeat=repeat,
        endpoint=endpoint,
        attempts=1,
        result=result() if res is None else res,
        drift_ms=drift,
        expected="blue",
        extra={} if extra is None else extra,
        bundle=f"items/{item_id}",
    )


def test_a_row_has_the_fixed_columns_in_order_then_the_extras() -> None:
    row = summary_row(record(extra={"speaker": "f1", "status": "gold", "score": 3}))
    assert list(row)[: len(SUMMARY_COLUMNS)] == list(SUMMARY_COLUMNS)
    assert list(row)[len(SUMMARY_COLUMNS) :] == ["speaker", "extra_status", "score"]
    assert row["status"] == "ok" and row["extra_status"] == "gold" and row["speaker"] == "f1"
    assert row["ok"] is True and row["exit_code"] == 0 and row["error"] is None
    assert row["duration_s"] == 12.971 and row["attempts"] == 1
    assert row["lateness_p99_ms"] == 9.169 and row["drift_ms"] == 0.5
    assert row["timing"] == "realtime" and row["timing_valid"] is True
    assert row["turns"] == 2 and row["latency_p50_ms"] == 2759.229
    assert (row["latency_p95_ms"], row["latency_max_ms"]) == (4702.048, 4917.917)
    assert row["first_answer_latency_p50_ms"] == 600.542 and row["server_p50_ms"] == 118.966
    assert (row["overlap_p50_ms"], row["gap_p50_ms"]) == (0.0, 600.542)
    assert (row["unanswered_turns"], row["cut_turns"]) == (0, 1)
    assert row["transcript"].endswith("I see blue.") and row["expected"] == "blue"
    assert row["bundle"] == "items/a" and row["endpoint"] == "ws://h1:8000/v1/realtime"


def test_an_extra_named_like_an_earlier_renamed_one_stays_apart() -> None:
    row = summary_row(record(extra={"extra_ok": 1, "ok": 2}))
    assert (row["ok"], row["extra_ok"], row["extra_extra_ok"]) == (True, 1, 2)


def test_a_run_without_metrics_has_none_for_them() -> None:
    res = result(ok=False, p99=None, error="connect refused")
    del res["metrics"], res["turns"]
    row = summary_row(record(res=res, drift=None))
    assert row["timing_valid"] is None and row["lateness_p99_ms"] is None
    metric_cols = [c for c in SUMMARY_COLUMNS if c.endswith("_ms") or c.endswith("_turns")]
    assert all(row[c] is None for c in metric_cols) and row["turns"] is None
    assert row["error"] == "connect refused"


@pytest.mark.parametrize(
    ("p99", "drift", "valid"),
    [
        (20.0, 0.0, True),
        (20.1, 0.0, False),
        (5.0, 20.0, True),
        (5.0, -20.5, False),
        (5.0, 25.0, False),
        (5.0, None, True),  # no timeline: the lateness p99 alone decides
        (25.0, None, False),
    ],
)
def test_timing_validity_thresholds(p99: float, drift: float | None, valid: bool) -> None:
    assert summary_row(record(res=result(p99=p99), drift=drift))["timing_valid"] is valid


def test_timing_validity_threshold_is_configurable_and_checked() -> None:
    rec = record(res=result(p99=30.0))
    assert summary_row(rec, max_lateness_ms=50)["timing_valid"] is True
    with pytest.raises(ValueError, match="max_lateness_ms"):
        summary_row(rec, max_lateness_ms=-1)
    with pytest.raises(ValueError, match="max_lateness_ms"):
        EvalSummary([rec], max_lateness_ms=float("nan"))


def test_not_realtime_has_no_timing_validity() -> None:
    row = summary_row(record(res=result(timing="not_realtime", p99=None), drift=None))
    assert row["timing"] == "not_realtime" and row["timing_valid"] is None
    assert row["turns"] is None and row["latency_p50_ms"] is None


def test_percentiles_interpolate_linearly() -> None:
    assert percentiles([10.0, 0.0, 20.0, 30.0], (0.0, 0.5, 1.0)) == [0.0, 15.0, 30.0]
    assert percentiles([7.0], (0.99,)) == [7.0]
    with pytest.raises(ValueError, match="no values"):
        percentiles([], (0.5,))
    with pytest.raises(ValueError, match="within"):
        percentiles([1.0], (1.5,))


def test_pooled_percentiles_exclude_failed_and_timing_invalid_items() -> None:
    good = record("good", result(turns=[turn(100.0, 10.0), turn(300.0, 30.0)]))
    good2 = record("good2", result(turns=[turn(200.0, 20.0, overlap_ms=40.0)]))
    failed = record("bad", result(ok=False, turns=[turn(9000.0, 900.0)], error="boom"))
    late = record("late", result(p99=50.0, turns=[turn(8000.0, 800.0)]))
    drifted = record("drift", result(turns=[turn(7000.0, 700.0)]), drift=30.0)
    agg = EvalSummary([good, failed, late, good2, drifted]).aggregate()
    assert (agg["items"], agg["ok"], agg["failed"]) == (5, 4, 1)
    assert (agg["timing_valid"], agg["timing_invalid"], agg["pooled_items"]) == (3, 2, 2)
    assert agg["max_lateness_ms"] == 20.0
    assert agg["latency_ms"] == {"count": 3, "p50": 200.0, "p95": 290.0, "p99": 298.0}
    assert agg["server_ms"]["count"] == 3 and agg["server_ms"]["p50"] == 20.0
    assert agg["overlap_ms"]["count"] == 3 and agg["overlap_ms"]["p99"] == pytest.approx(39.2)
    assert agg["gap_ms"]["p50"] == 200.0


def test_overlap_and_gap_pool_heard_turns_only_and_tolerate_missing_fields() -> None:
    unheard = turn(None, 5.0, heard_ms=0.0, heard_start_ms=None, overlap_ms=0.0, gap_ms=None)
    old = turn(100.0, 10.0)
    del old["overlap_ms"], old["gap_ms"]  # a result.json from before the two fields
    agg = EvalSummary([record(res=result(turns=[unheard, old, turn(50.0, 1.0)]))]).aggregate()
    assert agg["latency_ms"]["count"] == 2 and agg["server_ms"]["count"] == 3
    assert agg["overlap_ms"]["count"] == 1 and agg["gap_ms"] == {
        "count": 1,
        "p50": 50.0,
        "p95": 50.0,
        "p99": 50.0,
    }


def test_no_data_gives_empty_distributions() -> None:
    agg = EvalSummary([]).aggregate()
    assert agg["items"] == 0 and agg["failures"] == [] and agg["endpoints"] == {}
    assert agg["latency_ms"] == {"count": 0, "p50": None, "p95": None, "p99": None}


def test_failures_group_by_error_with_volatile_details_normalised() -> None:
    def failing(i: str, err: str | None, endpoint: str | None = "ws://h2:1/x") -> ItemRecord:
        return record(i, result(ok=False, error=err), endpoint=endpoint)

    recs = [
        failing("a", "connect to 127.0.0.1:34513 refused after 3 tries"),
        failing("b", "session duplex-8c0d44873eff1596eda8d26d2d0bd4a1 ended with 'timeout'"),
        failing("c", "connect to 127.0.0.1:40001 refused after 12 tries"),
        failing("d", "session duplex-0123456789abcdef0123456789abcdef ended with 'timeout'"),
        failing("e", "connect to 10.0.0.2:9 refused after 1 tries", endpoint=None),
        record("ok"),
        failing("f", None),
    ]
    failures = EvalSummary(recs).aggregate()["failures"]
    assert failures[0] == {
        "error": "connect to N.N.N.N:N refused after N tries",
        "example": "connect to 127.0.0.1:34513 refused after 3 tries",
        "count": 3,
        "ids": ["a", "c", "e"],
    }
    assert failures[1]["error"] == "session duplex-… ended with 'timeout'"
    assert failures[1]["ids"] == ["b", "d"] and failures[2]["error"] == "status failed"
    assert normalise_error("id 123e4567-e89b-12d3-a456-426614174000 gone") == "id … gone"
    assert normalise_error("deadbeefcafe stays, cafe1234 goes") == "deadbeefcafe stays, … goes"
    endpoints = EvalSummary(recs).aggregate()["endpoints"]
    assert endpoints["ws://h2:1/x"] == {"items": 5, "ok": 0, "failed": 5}
    assert endpoints["(none)"] == {"items": 1, "ok": 0, "failed": 1}
    assert endpoints["ws://h1:8000/v1/realtime"] == {"items": 1, "ok": 1, "failed": 0}


def test_a_failure_group_lists_at_most_ten_ids_with_repeats_labelled() -> None:
    recs = [record("x", result(ok=False, error=f"e{i}"), repeat=i) for i in range(12)]
    (group,) = EvalSummary(recs).aggregate()["failures"]
    assert group["count"] == 12 and group["ids"] == [f"x/{i}" for i in range(10)]


def summary_for_files() -> EvalSummary:
    failed = result(ok=False, p99=None, error="boom 42")
    del failed["metrics"], failed["turns"]
    return EvalSummary(
        [
            record("a", extra={"speaker": "f1", "tags": ["x", "y"], "flag": True}),
            record("b/ü", failed, drift=None, extra={"notes": 'naïve, "q"', "speaker": "m2"}),
            record("c", result(p99=33.0)),
        ]
    )


def test_csv_round_trips_with_the_union_of_extras(tmp_path: Path) -> None:
    summary = summary_for_files()
    summary.write(tmp_path)
    with (tmp_path / "summary.csv").open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
        header = reader.fieldnames
    assert header == [*SUMMARY_COLUMNS, "speaker", "tags", "flag", "notes"]
    a, b, c = rows
    assert a["ok"] == "true" and a["timing_valid"] == "true" and a["tags"] == '["x","y"]'
    assert a["flag"] == "true" and a["notes"] == "" and a["repeat"] == ""
    assert a["transcript"] == "You said: hello.\nI see blue." and a["latency_p50_ms"] == "2759.229"
    assert b["id"] == "b/ü" and b["ok"] == "false" and b["timing_valid"] == ""
    assert b["notes"] == 'naïve, "q"' and b["speaker"] == "m2" and b["flag"] == ""
    assert b["error"] == "boom 42" and b["latency_p50_ms"] == ""
    assert c["timing_valid"] == "false" and c["lateness_p99_ms"] == "33.0"


def test_jsonl_has_one_object_per_row(tmp_path: Path) -> None:
    summary = summary_for_files()
    summary.write(tmp_path)
    lines = (tmp_path / "summary.jsonl").read_text(encoding="utf-8").splitlines()
    docs = [json.loads(line) for line in lines]
    assert docs == summary.rows and docs[1]["id"] == "b/ü" and "b/ü" in lines[1]
    assert docs[0]["tags"] == ["x", "y"] and docs[1]["timing_valid"] is None
    assert summary.to_dict() == {"aggregate": summary.aggregate(), "items": docs}


def test_markdown_shows_the_aggregate(tmp_path: Path) -> None:
    summary = summary_for_files()
    summary.write(tmp_path)
    md = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert md.startswith("# Eval summary")
    assert "Items: 3 (2 ok, 1 failed), 1 timing-invalid." in md
    # Only item a is pooled: latencies 600 and 5000 → p50 2800, p95 4780, p99 4956.
    assert "| latency | 2 | 2800.0 | 4780.0 | 4956.0 |" in md
    assert "| server time | 2 | 120.0 | 210.0 | 218.0 |" in md
    assert "| overlap | 2 | 0.0 | 0.0 | 0.0 |" in md
    assert "| gap | 2 | 2800.0 | 4780.0 | 4956.0 |" in md
    assert "| boom N | 1 | b/ü | boom 42 |" in md
    assert "| ws://h1:8000/v1/realtime | 3 | 2 | 1 |" in md
    assert "within 20 ms" in md and "Timing-invalid runs (1)" in md
    empty = EvalSummary([record(res=result(turns=[]))]).render_md()
    assert "| gap | 0 | – | – | – |" in empty and "None." in empty


def test_writes_are_atomic_and_leave_no_temporary_files(tmp_path: Path) -> None:
    out = tmp_path / "eval"
    summary_for_files().write(out)
    assert sorted(p.name for p in out.iterdir()) == ["summary.csv", "summary.jsonl", "summary.md"]
    before = (out / "summary.jsonl").read_text(encoding="utf-8")
    # A rename that cannot happen (summary.md is a directory) fails the write, cleans up.
    (out / "summary.md").unlink()
    (out / "summary.md").mkdir()
    (out / "summary.md" / "keep").write_text("x")
    with pytest.raises(OSError):
        EvalSummary([record("z")]).write(out)
    assert not list(out.glob("*.tmp")) and not list(out.glob(".*.tmp"))
    assert (out / "summary.jsonl").read_text(encoding="utf-8") != before  # replaced whole
    assert json.loads((out / "summary.jsonl").read_text(encoding="utf-8"))["id"] == "z"


def write_bundle(bundle: Path, res: dict[str, Any] | None, timeline: Any = None) -> None:
    bundle.mkdir(parents=True, exist_ok=True)
    if res is not None:
        (bundle / "result.json").write_text(json.dumps(res), encoding="utf-8")
    if timeline is not None:
        text = timeline if isinstance(timeline, str) else json.dumps(timeline)
        (bundle / "input_timeline.json").write_text(text, encoding="utf-8")


def timeline_doc(latenesses: list[float | None], pacing: str = "realtime") -> dict[str, Any]:
    appends = [
        {"index": i, "media_start_ms": i * 200, "media_end_ms": (i + 1) * 200, "lateness_ms": lt}
        for i, lt in enumerate(latenesses)
    ]
    return {"schema_version": 1, "clock": {"pacing": pacing}, "appends": appends, "commits": []}


def from_bundle(bundle: Path) -> ItemRecord:
    return ItemRecord.from_bundle(
        bundle,
        id="a",
        repeat=2,
        endpoint="ws://h1/x",
        attempts=2,
        expected="blue",
        extra={"speaker": "f1"},
        bundle="items/a/2",
        previous_errors=["boom"],
    )


def test_from_bundle_reads_the_result_and_the_drift(tmp_path: Path) -> None:
    res = result()
    write_bundle(tmp_path / "b", res, timeline_doc([13.083, 0.638, 7.25]))
    rec = from_bundle(tmp_path / "b")
    assert rec.result == res and rec.drift_ms == 7.25 and rec.label == "a/2"
    assert (rec.attempts, rec.previous_errors, rec.extra) == (2, ("boom",), {"speaker": "f1"})
    row = summary_row(rec)
    assert row["drift_ms"] == 7.25 and row["bundle"] == "items/a/2" and row["repeat"] == 2


def test_from_bundle_on_files_written_by_the_project_writers(tmp_path: Path) -> None:
    """result.json from `RunResult.to_dict()` and the timeline from `InputTimeline.write`."""
    from duplex_client.analysis.turns import Turn
    from duplex_client.framing.clock import SendTiming
    from duplex_client.framing.plan import PlannedAppend
    from duplex_client.framing.timeline import InputTimeline
    from duplex_client.run.result import RunResult

    timeline = InputTimeline(session_id="duplex-" + "3f" * 16, url="ws://127.0.0.1:9/v1/realtime")
    timeline.describe_stream(chunk_ms=200, media_origin_ms=0, pacing="realtime")
    for i, late in enumerate([12.5, 0.4, 3.75]):
        pcm = bytes(6400)
        planned = PlannedAppend(
            "clip", pcm, i * 3200, (i + 1) * 3200, 200, (i + 1) * 200, None, None, None, None,
            i * 200, (i + 1) * 200,
        )  # fmt: skip
        timeline.add_append(planned, f"evt_{i:032x}", SendTiming(i * 200.0, i * 200 + late, late))
    bundle = tmp_path / "items" / "clip"
    bundle.mkdir(parents=True)
    timeline.write(bundle)
    heard = Turn("r1", 3, 4000.0, 4000.5, 4001.0, 6001.0, 2000.0, 2000.0, None, 3400.0, "vad",
                 601.0, 200.0, "hi")  # fmt: skip
    run = RunResult(ok=True, status="ok", exit_code=0, turns=[heard], metrics={"turns": 1})
    run.lateness_ms = timeline.totals()["lateness_ms"]
    (bundle / "result.json").write_text(json.dumps(run.to_dict()), encoding="utf-8")
    rec = from_bundle(bundle)
    assert rec.drift_ms == 3.75
    row = summary_row(rec)
    assert row["timing_valid"] is True and row["turns"] == 1 and row["latency_p50_ms"] is None
    assert row["lateness_p99_ms"] == pytest.approx(12.5, abs=0.2)
    pooled = EvalSummary([rec]).aggregate()
    assert pooled["latency_ms"]["p50"] == 601.0 and pooled["server_ms"]["p50"] == 200.0
    # Turn writes overlap_ms (0.0 by default, heard) and gap_ms (None: not measured).
    assert pooled["overlap_ms"]["count"] == 1 and pooled["gap_ms"]["count"] == 0


def test_from_bundle_drift_is_none_without_a_realtime_timeline(tmp_path: Path) -> None:
    write_bundle(tmp_path / "none", result())
    assert from_bundle(tmp_path / "none").drift_ms is None
    write_bundle(tmp_path / "empty", result(), timeline_doc([]))
    assert from_bundle(tmp_path / "empty").drift_ms is None
    write_bundle(tmp_path / "asap", result(), timeline_doc([3.0], pacing="asap"))
    assert from_bundle(tmp_path / "asap").drift_ms is None
    asap_result = result(timing="not_realtime", p99=None)
    write_bundle(tmp_path / "nr", asap_result, timeline_doc([3.0]))
    assert from_bundle(tmp_path / "nr").drift_ms is None


@pytest.mark.parametrize(
    ("res", "timeline", "message"),
    [
        (None, None, r"result\.json: missing"),
        ("{not json", None, r"result\.json: not readable JSON"),
        ([1, 2], None, r"result\.json: not a result"),
        ({"ok": "yes", "status": "ok"}, None, r"result\.json: not a result"),
        ({"ok": True, "status": "ok", "turns": [1]}, None, r"`turns` is not a list"),
        ({"ok": True, "status": "ok"}, "{torn", r"input_timeline\.json: not readable JSON"),
        ({"ok": True, "status": "ok"}, {"appends": 3}, r"input_timeline\.json: not an input"),
    ],
)
def test_from_bundle_rejects_a_missing_or_garbled_file(
    tmp_path: Path, res: Any, timeline: Any, message: str
) -> None:
    bundle = tmp_path / "b"
    bundle.mkdir()
    if res is not None:
        text = res if isinstance(res, str) else json.dumps(res)
        (bundle / "result.json").write_text(text, encoding="utf-8")
    write_bundle(bundle, None, timeline)
    with pytest.raises(ValueError, match=message):
        from_bundle(bundle)


def test_rows_are_copies_the_summary_keeps_its_own() -> None:
    summary = EvalSummary([record("a")])
    rows = summary.rows
    rows[0]["id"] = "changed"
    assert summary.rows[0]["id"] == "a"
    res = result()
    snapshot = copy.deepcopy(res)
    EvalSummary([record(res=res)]).to_dict()
    assert res == snapshot  # summarising does not touch the result documents
