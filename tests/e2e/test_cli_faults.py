"""`duplex-cli stream` against a misbehaving reference server: each run ends right, loses nothing.

For every fault: the exit code and message, `events.jsonl` without a duplicated or missing
`server_event_seq`, the server's accepted appends equal to the client's timeline (no gap, no
duplicate) and `output.wav` holding every audio delta once. The table in docs/reliability.md
summarises these runs.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

from duplex_client.framing import check_timeline
from duplex_client.server import Faults, ReferenceServer
from duplex_client.server.engine.script import Script
from tests.e2e.helpers import (
    CLI,
    ENV,
    LONG_ANSWER_SCRIPT,
    assert_received_once,
    assert_server_view_matches,
    events,
    load,
    run_cli,
)

SHORT_ANSWER_SCRIPT = {
    **LONG_ANSWER_SCRIPT,
    "rules": [
        {"on": "unit", "index": 1, "do": "speak", "audio_ms": 1000, "text": "short"},
        {"on": "commit", "do": "listen"},
    ],
}


async def run_against(
    faults: Faults,
    clip: Path,
    run: Path,
    *extra: str,
    realtime: bool = True,
    answers: dict[str, Any] = LONG_ANSWER_SCRIPT,
) -> tuple[Any, list[dict[str, Any]]]:
    """Stream `clip` + 1 s tail to an in-process server with `faults`; (process, server rows)."""
    script = Script.from_dict(answers)
    async with ReferenceServer(profile="minicpmo", faults=faults, script=script) as server:
        done = await run_cli(
            "--url",
            server.url,
            "--input-video",
            str(clip),
            "--tail-silence-s",
            "1",
            "--output-dir",
            str(run),
            "-q",
            *([] if realtime else ["--burst"]),
            *extra,
        )
        rows = server.appends()
    return done, rows


def assert_clock_kept(run: Path) -> None:
    """Deadlines stayed on the media clock: never re-timed, and no drift left after an outage."""
    timeline = load(run, "input_timeline.json")
    rows = timeline["appends"]
    assert all(r["scheduled_offset_ms"] == r["media_end_ms"] for r in rows)  # when captured
    assert rows[-1]["scheduled_offset_ms"] == 4000  # 4 s of media, whatever the outages
    resumed = max(r["resumed_offset_ms"] for r in timeline["reconnects"])
    after = [r for r in rows if r["scheduled_offset_ms"] > resumed + 300]
    assert all(r["lateness_ms"] < 500 for r in after), after  # generous: a loaded machine


async def test_drop_once_mid_stream_is_survived(clip: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    done, server_rows = await run_against(Faults(drop_after_events=6), clip, run)
    assert done.returncode == 0, done.stderr
    assert "reconnected: connection lost at" in done.stderr
    timeline = load(run, "input_timeline.json")
    (reconnect,) = timeline["reconnects"]
    assert reconnect["outcome"] == "resumed" and reconnect["attempts"] >= 1
    assert reconnect["resumed_offset_ms"] > reconnect["started_offset_ms"]
    assert len(timeline["appends"]) == 20
    assert_server_view_matches(run, server_rows)
    evs = assert_received_once(run)
    types = [e["type"] for e in evs]
    resumed_at = types.index("connection.resumed")
    assert types[resumed_at + 1] == "session.resumed"
    assert evs[resumed_at]["event"]["attempt"] == reconnect["attempts"]
    assert "resume_token" not in json.dumps(evs).replace('"resume_token": "<redacted>"', "")
    assert_clock_kept(run)
    result = load(run, "result.json")
    assert result["ok"] and result["counts"]["reconnects"] == 1


async def test_drop_three_times_is_survived(clip: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    done, server_rows = await run_against(Faults(drop_after_events=4, drop_times=3), clip, run)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("reconnected: connection lost at") == 3
    timeline = load(run, "input_timeline.json")
    assert [r["outcome"] for r in timeline["reconnects"]] == ["resumed"] * 3
    assert_server_view_matches(run, server_rows)
    evs = assert_received_once(run)
    assert sum(e["type"] == "connection.resumed" for e in evs) == 3
    assert_clock_kept(run)
    assert load(run, "session.json")["attachment_generation"] == 4


async def test_drop_without_reconnect_exits_1_with_partial_bundle(
    clip: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    done, server_rows = await run_against(Faults(drop_after_events=6), clip, run, "--no-reconnect")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "failed" in done.stderr and str(run) in done.stderr
    assert "reconnection is off" in done.stderr
    result = load(run, "result.json")
    assert result["ok"] is False and result["status"] == "failed" and result["error"]
    kept = events(run)  # what arrived before the drop is kept
    assert kept[0]["type"] == "session.created" and len(kept) >= 3
    assert_received_once(run)
    rows = load(run, "input_timeline.json")["appends"]
    assert [r["event_id"] for r in server_rows] == [r["event_id"] for r in rows][: len(server_rows)]


async def test_unit_slower_than_real_time(clip: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    done, server_rows = await run_against(
        Faults(slow_units={1: 2000}), clip, run, realtime=False, answers=SHORT_ANSWER_SCRIPT
    )
    assert done.returncode == 0, done.stderr
    assert_server_view_matches(run, server_rows)
    evs = assert_received_once(run)
    created = [e for e in evs if e["type"] == "response.created"]
    updated = next(e for e in evs if e["type"] == "session.updated")
    assert created and created[0]["t_ms"] - updated["t_ms"] > 1800  # the 1 s unit took 2 s


async def test_delayed_session_created(clip: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    done, server_rows = await run_against(
        Faults(created_delay_ms=1500),
        clip,
        run,
        "--handshake-timeout-s",
        "10",
        realtime=False,
        answers=SHORT_ANSWER_SCRIPT,
    )
    assert done.returncode == 0, done.stderr
    evs = assert_received_once(run)
    assert evs[0]["type"] == "session.created" and evs[0]["t_ms"] >= 1400
    assert_server_view_matches(run, server_rows)


async def test_error_event_mid_response_exits_1(clip: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    faults = Faults(error_code="engine_error", error_at_unit=2)
    done, server_rows = await run_against(faults, clip, run)
    assert done.returncode == 1, done.stderr
    assert "engine_error" in done.stderr
    result = load(run, "result.json")
    assert result["closed_reason"] == "error"
    assert [e["code"] for e in result["server_errors"]] == ["engine_error"]
    evs = assert_received_once(run)
    types = [e["type"] for e in evs]
    failed = [e for e in evs if e["type"] == "response.done"]
    assert failed[-1]["event"]["response"]["status"] == "failed"  # it was cut mid-answer
    assert types.index("response.output_audio.delta") < types.index("error")
    assert_server_view_matches(run, server_rows)


async def test_server_process_killed_exits_1(clip: Path, tmp_path: Path) -> None:
    """What was queued after the kill never left: the record and the summary say so (#32)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(LONG_ANSWER_SCRIPT))
    server = await asyncio.create_subprocess_exec(
        CLI,
        "serve",
        "--port",
        "0",
        "--script",
        str(script),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=ENV,
    )
    try:
        assert server.stdout is not None
        line = ""
        while "ws://" not in line:
            line = (await asyncio.wait_for(server.stdout.readline(), 30)).decode()
            assert line, "duplex-cli serve printed no URL"
        url = next(w for w in line.split() if w.startswith("ws://"))
        run = tmp_path / "run"
        cli = asyncio.ensure_future(
            run_cli(
                "--url",
                url,
                "--input-video",
                str(clip),
                "--tail-silence-s",
                "1",
                "--output-dir",
                str(run),
                "--reconnect-attempts",
                "2",
            )
        )
        log = run / "events.jsonl"
        for _ in range(400):  # until the answer to unit 1 is under way
            if log.exists() and "response.output_audio.delta" in log.read_text():
                break
            await asyncio.sleep(0.05)
        server.send_signal(signal.SIGKILL)
        await server.wait()
        done = await cli
    finally:
        if server.returncode is None:
            server.kill()
            await server.wait()
    assert done.returncode == 1, done.stderr
    assert "not resumed after 2 attempt(s)" in done.stderr
    assert "connection refused" in done.stderr
    assert_received_once(run)
    timeline = load(run, "input_timeline.json")
    assert [r["outcome"] for r in timeline["reconnects"]] == ["failed"]
    counts = load(run, "result.json")["counts"]
    assert counts["reconnects"] == 0 and counts["reconnects_failed"] == 1  # none resumed
    # The appends queued while the client tried to resume never left: no send time, written
    # false; those written before the kill say so, and the server confirmed some of them.
    rows = timeline["appends"]
    written = [r["written"] for r in rows]
    assert True in written and False in written
    assert written == sorted(written, reverse=True)  # written ones first, then none
    for row in rows:
        if not row["written"]:
            assert row["sent_offset_ms"] is None and row["lateness_ms"] is None
            assert row["acknowledged_offset_ms"] is None
    acked = [r for r in rows if r["acknowledged_offset_ms"] is not None]
    assert acked and all(r["written"] for r in acked)
    totals = timeline["totals"]
    assert totals["written"] == written.count(True) < totals["appends"] == len(rows)
    assert totals["acknowledged"] == len(acked) and check_timeline(timeline) == []
    assert counts["appends_written"] == totals["written"]
    # the summary counts what was sent, and says what was not
    assert f"sent             {totals['written']} appends," in done.stderr
    assert f"not sent         {written.count(False)} appends" in done.stderr
