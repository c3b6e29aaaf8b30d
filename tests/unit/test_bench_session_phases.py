"""`benchmarks.bench_session_phases`: CPU between phase marks, by thread group, per second."""

from __future__ import annotations

import pytest

from benchmarks import bench_session_phases as phases


def test_cells_split_each_phase_by_thread_group_and_count_wakeups() -> None:
    meter = phases._Meter()
    names = {1: "MainThread", 2: "duplex-plan_0", 3: "duplex-thumbnails_0"}
    # (phase, process CPU s, per-thread CPU s, names, wakeups so far)
    meter.marks = [
        ("stream", 1.0, {1: 0.5, 2: 0.0}, names, 10),
        ("after", 1.6, {1: 0.7, 2: 0.2, 3: 0.1, 4: 0.05}, names, 40),
        ("end", 1.7, {1: 0.78, 2: 0.2}, names, 45),  # the thumbnail thread has ended
    ]
    cells = meter.cells(media_s=10.0)
    assert cells["stream/main"] == pytest.approx(20.0)  # 0.2 s over 10 s of media
    assert cells["stream/plan"] == pytest.approx(20.0)
    assert cells["stream/thumbnails"] == pytest.approx(10.0)
    # unnamed threads, and the ones gone by the next mark, are the rest of the process's CPU
    assert cells["stream/native"] == pytest.approx(10.0)
    assert cells["stream/total"] == pytest.approx(60.0) and cells["stream/wakes"] == 30
    assert cells["after/main"] == pytest.approx(8.0) and cells["after/wakes"] == 5
    assert cells["after/native"] == pytest.approx(2.0)


def test_bad_settings_are_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(phases.REPS_ENV, "0")
    with pytest.raises(SystemExit, match="BENCH_PHASES_REPS must be a positive whole number"):
        phases.main()
    monkeypatch.setenv(phases.REPS_ENV, "1")
    monkeypatch.setenv(phases.INPUTS_ENV, "video")
    with pytest.raises(SystemExit, match="BENCH_PHASES_INPUTS must list clip and/or wav"):
        phases.main()
