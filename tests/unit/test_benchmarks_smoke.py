"""The pacing, sessions and clips benchmarks import; their quick modes run (no timing checks)."""

from __future__ import annotations

import asyncio
import importlib
import os
import shutil
from pathlib import Path
from typing import Any

import av
import pytest

from benchmarks import _common
from benchmarks._common import TimedTarget, percentile, table
from duplex_client.protocol.capabilities import Capabilities


class _Inner:
    capabilities = Capabilities()
    audio_end_ms = 0

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def append_input(self, pcm: bytes | None = None, **kw: Any) -> str:
        self.sent.append({"pcm": pcm, **kw})
        return f"evt_{len(self.sent)}"

    async def commit(self, *, final: bool = True, create_response: bool | None = None) -> str:
        return "evt_commit"


def test_timed_target_records_releases_and_forwards() -> None:
    inner = _Inner()
    target = TimedTarget(inner)

    async def run() -> None:
        await target.append_input(b"\0\0", media_start_ms=0, media_end_ms=200)
        await target.append_input(b"\0\0", media_start_ms=200, media_end_ms=400, unit_index=0)

    asyncio.run(run())
    assert [r.media_start_ms for r in target.releases] == [0, 200]
    assert target.releases[1].unit_index == 0
    assert [s["media_end_ms"] for s in inner.sent] == [200, 400]
    assert len(target.lateness_ms(target.releases[0].released_at)) == 2
    assert len(target.send_ms()) == 2


def test_helpers() -> None:
    assert percentile([], 0.99) == 0.0
    assert percentile([1.0, 2.0, 3.0], 0.5) == 2.0
    assert table(("a", "b"), [(1, 2)]).splitlines()[1] == "|---|---:|"
    assert len(_common.speech_like_pcm(200)) == 6400
    assert _common.camera_image().shape == (480, 640, 3)
    assert _common.quick_mode(["--quick"])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bench_pacing", "bench_sessions", "bench_clips", "bench_eval"])
def test_quick_mode_runs(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(_common.QUICK_ENV, "1")
    module = importlib.import_module(f"benchmarks.{name}")
    module.main()
    out = capsys.readouterr().out
    assert "| N |" in out or "| pacing |" in out
    assert "target" in out


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_ingest_pins_one_core_and_gives_the_rest_back() -> None:
    from benchmarks.bench_ingest import one_core

    before = os.sched_getaffinity(0)
    with one_core() as cpu:
        assert os.sched_getaffinity(0) == {cpu}
    assert os.sched_getaffinity(0) == before  # later benchmarks in `make bench` get every core


def test_clips_bench_caches_its_clip(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import bench_clips

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path))
    path = bench_clips.clip_path("tiny", (64, 48), 2)
    assert path.parent == tmp_path and path.stat().st_size > 0
    mtime = path.stat().st_mtime_ns
    assert bench_clips.clip_path("tiny", (64, 48), 2).stat().st_mtime_ns == mtime
    assert bench_clips.planning_cost(path, 2) > 0


def test_plan_cache_bench_measures_the_issues_not_aligned_kind() -> None:
    from benchmarks import bench_plan_cache

    kind = bench_plan_cache.KINDS[0]
    assert kind.name == "720p_gop1s_off" and kind.keyint == 29 and kind.size == (1280, 720)
    assert bench_plan_cache.QUICK_KINDS[0].keyint == 29


def test_eval_bench_caches_linked_items_of_speech(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks import bench_eval
    from duplex_client.eval import load_items
    from duplex_client.media.clip import open_clip

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path))
    folder = bench_eval.items_dir(3, 2, (64, 48))
    items = load_items(folder)
    assert [i.id for i in items] == ["item_00.mp4", "item_01.mp4", "item_02.mp4"]
    first = Path(str(items[0].input_video))
    assert all(Path(str(i.input_video)).samefile(first) for i in items)  # one clip, linked
    with open_clip(first, fps=1.0) as clip:
        assert clip.audio is not None
        assert abs(sum(len(c) for c in clip.audio.chunks()) / 32000 - 2.0) < 0.05
    mtime = first.stat().st_mtime_ns
    assert bench_eval.items_dir(3, 2, (64, 48)) == folder
    assert first.stat().st_mtime_ns == mtime


def test_eval_bench_verdict_names_what_missed(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import bench_eval

    monkeypatch.delenv(bench_eval.LEVELS_ENV, raising=False)
    monkeypatch.delenv(bench_eval.TAIL_ENV, raising=False)
    p = bench_eval.plan(quick=False)
    assert (p.items, p.seconds, p.levels) == (64, 10, (1, 8, 32))
    summary = {"items": 64, "ok": 64, "failed": 0, "timing_valid": 64, "timing_invalid": 0}
    good = {**bench_eval.digest({**summary, "max_lateness_ms": 20.0}, []), "wall_s": 21.0}
    good.update(duration_p50=10.5, duration_sum=64 * 10.5, late_phases={})
    assert "MET" in bench_eval.verdict(p, {32: good})
    slow = {**good, "wall_s": 30.0, "over_lateness": 2, "late_phases": {"start": 5}}
    line = bench_eval.verdict(p, {32: slow})
    assert "MISSED" in line and "throughput: 66.7% of ideal" in line and "start 5" in line
    assert "not measured" in bench_eval.verdict(p, {8: good})
    monkeypatch.setenv(bench_eval.LEVELS_ENV, "0,8")
    with pytest.raises(SystemExit, match="BENCH_EVAL_LEVELS must be"):
        bench_eval.plan(quick=False)


def test_resample_bench_tells_the_linear_baseline_from_the_package(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks import bench_resample

    made = bench_resample.contenders()
    linear = bench_resample.quality(made["linear (baseline)"])
    ours = bench_resample.quality(made["package Resampler"])
    assert linear["tone10k"] > -1 and ours["tone10k"] < -120  # aliased at full level / gone
    assert linear["image_up"] > -10 and ours["image_up"] < -120
    assert ours["flat_down"] < 0.01 and ours["flat_up"] < 0.01 and ours["chunking"] == 0
    assert 0 < ours["lag_down"] < 5 and 0 < ours["lag_up"] < 5
    monkeypatch.setenv(_common.QUICK_ENV, "1")
    bench_resample.main()
    assert "| package Resampler |" in capsys.readouterr().out


def test_web_bench_reads_its_figures_from_a_bundle(tmp_path: Any) -> None:
    import json

    from benchmarks import bench_web

    (tmp_path / "input_timeline.json").write_text(
        json.dumps({"appends": [{"lateness_ms": 5.0, "audio_bytes": 6400},
                                {"lateness_ms": 9.0, "audio_bytes": 0}]})
    )  # fmt: skip
    turns = [{"heard_start_ms": 1090.0, "first_audio_ms": 1000.0}, {"heard_start_ms": None}]
    (tmp_path / "result.json").write_text(json.dumps({"ok": True, "turns": turns}))
    got = bench_web.figures(tmp_path)
    assert got == {"capture": [5.0 + bench_web.BLOCK_MS], "playback": [90.0], "ok": [1.0]}


def test_clip_kinds_selection_and_time_box(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import _clip_kinds as kinds

    assert kinds.selected(True) == kinds.QUICK_KINDS
    assert kinds.selected(False, "") == kinds.KINDS and len(kinds.KINDS) == 12
    assert kinds.KINDS[0].label == "720p30, GOP 1 s not aligned, B-frames"  # the issue's clip
    assert [k.size[1] for k in kinds.selected(False, "sizes")] == [720, 1080, 2160]
    picked = kinds.selected(False, "720p_gop10s_nob, 720p_gop0.5s")
    assert [(k.keyint, k.bframes) for k in picked] == [(300, False), (15, True)]
    with pytest.raises(SystemExit, match="BENCH_CLIPS_KINDS must name a set or kinds"):
        kinds.selected(False, "720p_gop3s")
    monkeypatch.setenv(kinds.BUDGET_ENV, "0")
    with pytest.raises(SystemExit, match="BENCH_CLIPS_BUDGET_S must be a positive"):
        kinds.budget_s()
    monkeypatch.setenv(kinds.BUDGET_ENV, "90")
    assert kinds.budget_s() == 90.0
    monkeypatch.delenv(kinds.RUNS_ENV, raising=False)
    assert kinds.runs() == 1
    monkeypatch.setenv(kinds.RUNS_ENV, "3")
    assert kinds.runs() == 3
    monkeypatch.setenv(kinds.RUNS_ENV, "0")
    with pytest.raises(SystemExit, match="BENCH_CLIPS_RUNS must be a whole number"):
        kinds.runs()
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "ffmpeg CLI not found" in str(kinds.ffmpeg_missing())


def test_clip_kind_row_judges_the_target() -> None:
    from benchmarks import _clip_kinds as kinds
    from benchmarks.bench_clips import _kind_row

    kind = kinds.KINDS[0]
    r = {"cpu_ms_per_s": 70.0, "exact_ms_per_s": 50.0, "plan_ms_per_s": 40.0}
    r |= {"audio_ms_per_s": 4.0, "video_s": 20.3, "decoded": 133}
    row = _kind_row(kind, r)
    assert row[3] == "10%" and row[7] == "68.0" and row[8] == "**no**" and row[11] == "133 / 21"
    assert _kind_row(kind, {**r, "cpu_ms_per_s": 68.0})[8] == "yes"
    assert _kind_row(kind, {k: v for k, v in r.items() if k != "exact_ms_per_s"})[8] == "–"


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="no ffmpeg CLI")
def test_clip_kind_clip_and_floors(tmp_path: Path) -> None:
    from benchmarks import _clip_kinds as kinds

    kind = kinds.Kind("tiny_gop29", (64, 48), 29, bframes=False, seconds=2)
    path = kinds.kind_clip(kind, tmp_path)
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        packets = [p for p in container.demux(stream) if p.size]
        keys = [round(p.pts * stream.time_base * 30) for p in packets if p.is_keyframe]
    assert len(packets) % 29 == 0  # whole GOPs
    assert keys == list(range(0, len(packets), 29))  # a keyframe every 29 frames, no other
    floors = kinds.ffmpeg_floors(path, kinds.video_seconds(path), passes=1)
    assert floors["every_ms_per_s"] > 0 and floors["startup_ms"] > 0
    assert floors["exact_ms_per_s"] >= 0


def test_eval_admission_modes_parse_and_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import _eval_modes as modes

    monkeypatch.delenv(modes.MODE_ENV, raising=False)
    assert modes.mode() is None
    monkeypatch.setenv(modes.MODE_ENV, "audio256")
    assert modes.mode() == "audio256"
    monkeypatch.setenv(modes.MODE_ENV, "video")
    with pytest.raises(SystemExit, match="must be one of video720, audio256"):
        modes.mode()
    monkeypatch.setenv(modes.BUDGET_ENV, "0")
    with pytest.raises(SystemExit, match=modes.BUDGET_ENV):
        modes.budget_s()
    admission = {"cores": 2, "cpu_budget": 0.8, "max_running": 12, "message": None}
    good = {"wall_s": 50.0, "cpu_s": 64.0, "timing_valid": 32, "timing_invalid": 0}
    good |= {"failed": 0, "errors": [], "late_p99_max": 9.0, "admission": admission}
    assert modes.need_s(good) == 40.0
    assert "MET (wall 1.25 x" in modes.verdict("video720", 32, 20, good)
    slow = {**good, "wall_s": 60.0, "timing_valid": 30, "timing_invalid": 2}
    line = modes.verdict("video720", 32, 20, slow)
    assert "MISSED: 2 item(s) not timing-valid; wall 1.50 x" in line and "floor" not in line
    cheap = {**good, "wall_s": 23.8, "cpu_s": 22.4}  # all 32 at once: real time is the floor
    line = modes.verdict("video720", 32, 20, cheap)
    assert "MISSED: wall 1.70 x the CPU need / budget; the bound 1.3 x 14.0 s is below" in line
    assert line.endswith("wall 1.19 x that floor")
    audio = {**good, "wall_s": 85.0, "timing_valid": 256}
    assert "MET (94.1% of the ideal)" in modes.verdict("audio256", 256, 10, audio)
