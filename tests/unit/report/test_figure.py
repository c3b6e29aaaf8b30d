"""Static report figures: the run's tracks, the eval's distributions, PNGs (Agg).

The figures use matplotlib's object-oriented API only, so no backend (MPLBACKEND) is needed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

from duplex_client.eval.api import EvalResult
from duplex_client.report.bundle_reader import (
    Envelope,
    ReportInputError,
    RunBundleData,
    load_run_bundle,
)
from duplex_client.report.figure import (
    MISSING_EXTRA,
    RUN_TRACKS,
    run_end_ms,
    run_figure,
    save_png,
)
from duplex_client.report.figure_eval import eval_figure, eval_turns
from duplex_client.report.run_view import (
    DecisionMark,
    FrameThumb,
    LatenessPoint,
    Marker,
    RunView,
    TurnSpan,
    UnitBlock,
)
from duplex_client.report.track_columns import lanes
from duplex_client.run.result import RunResult
from duplex_client.run.stream import stream_clip
from duplex_client.server import ReferenceServer, Script
from tests.support.media_files import write_clip

TRACKS_NO_FRAMES = [n for n in RUN_TRACKS if n != "frames"]


async def _stream(tmp: Path) -> RunResult:
    clip = write_clip(tmp / "clip.mp4", video_seconds=3.0, audio_seconds=3.0, fps=5)
    script = Script.from_dict(
        {
            "rules": [
                {"on": "unit", "index": 1, "do": "speak", "text": "first answer", "delay_ms": 300},
                {"on": "unit", "index": 2, "do": "speak", "text": "second", "delay_ms": 100},
            ],
            "defaults": {"commit": {"do": "listen"}},
        }
    )
    async with ReferenceServer(profile="minicpmo", engine="scripted", script=script) as server:
        return await stream_clip(
            server.url,
            input_video=str(clip),
            tail_silence_s=1.0,
            annotations=[{"start_ms": 200, "end_ms": 1800}],
            output_dir=tmp / "run",
        )


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """One real paced run against the embedded reference server (scripted engine)."""
    result = asyncio.run(_stream(tmp_path_factory.mktemp("figure")))
    assert result.ok, result.error
    assert result.turns and all(t.latency_ms is not None for t in result.turns)
    return result


@pytest.fixture(scope="module")
def real_bundle(real_run: RunResult) -> RunBundleData:
    assert real_run.bundle_dir is not None
    return load_run_bundle(real_run.bundle_dir)


def by_label(fig: Figure) -> dict[str, Axes]:
    return {ax.get_label(): ax for ax in fig.axes}


def collections(ax: Axes, gid_prefix: str) -> list[Collection]:
    return [c for c in ax.collections if (c.get_gid() or "").startswith(gid_prefix)]


def points(ax: Axes, gid: str) -> int:
    return sum(len(c.get_offsets()) for c in collections(ax, gid) if c.get_gid() == gid)


def paths(ax: Axes, gid_prefix: str) -> int:
    return sum(len(c.get_paths()) for c in collections(ax, gid_prefix))


def assert_png(path: Path) -> None:
    assert path.stat().st_size > 10_000
    image = cv2.imread(str(path))
    assert image is not None and image.ndim == 3
    assert float(image.std()) > 5.0  # not a blank canvas
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


# --- a real bundle ---


def test_real_bundle_tracks(real_bundle: RunBundleData, tmp_path: Path) -> None:
    view = real_bundle.view
    fig = run_figure(real_bundle)
    axes = by_label(fig)
    assert list(axes) == TRACKS_NO_FRAMES
    assert all(ax.get_ylabel() == name for name, ax in axes.items())
    assert view.units and paths(axes["units"], "units:") == len(view.units)
    speak = sum(1 for d in view.decisions if d.decision == "speak")
    listen = sum(1 for d in view.decisions if d.decision == "listen")
    assert speak == 2 and listen >= 1
    assert points(axes["decisions"], "speak") == speak
    assert points(axes["decisions"], "listen") == listen
    measured = [t for t in view.turns if t.latency_ms is not None]
    assert len(measured) == 2 and paths(axes["turns"], "latency") == len(measured)
    assert paths(axes["turns"], "user_speech") == len(view.user_speech) == 1
    assert paths(axes["heard"], "heard_spans") == len(view.turns)
    assert points(axes["decisions"], "speak") == speak
    assert paths(axes["events"], "commit") == 1 and paths(axes["events"], "server_commit") == 1
    lateness = next(line for line in axes["lateness"].lines if line.get_gid() == "lateness")
    assert len(lateness.get_xdata()) == len(view.lateness) > 0
    for ax in fig.axes:  # one shared x axis that covers the whole run
        low, high = ax.get_xlim()
        assert low <= 0.0 and high >= view.duration_ms / 1000.0
    assert view.title in fig.get_suptitle() and "status ok" in fig.get_suptitle()
    assert str(view.model) in fig.get_suptitle()
    out = save_png(fig, tmp_path / "sub" / "run.png")
    assert out == tmp_path / "sub" / "run.png"
    assert_png(out)


def test_real_bundle_thumbnails_sit_over_their_units(real_bundle: RunBundleData) -> None:
    with_frames = [u for u in real_bundle.view.units if u.frames]
    assert with_frames, "the run's bundle has frame thumbnails"
    fig = run_figure(real_bundle, thumbnails=True)
    axes = by_label(fig)
    assert list(axes) == list(RUN_TRACKS)
    images = [a for a in axes["frames"].get_children() if isinstance(a, AxesImage)]
    assert len(images) == len(with_frames)
    starts = sorted(img.get_extent()[0] for img in images)
    assert starts == pytest.approx([u.start_ms / 1000.0 for u in with_frames])


def test_run_result_plot(real_run: RunResult, tmp_path: Path) -> None:
    fig = real_run.plot()
    assert isinstance(fig, Figure) and list(by_label(fig)) == TRACKS_NO_FRAMES
    assert "frames" in by_label(real_run.plot(thumbnails=True))
    assert_png(save_png(fig, tmp_path / "plot.png"))
    with pytest.raises(ValueError, match="no bundle_dir"):
        RunResult(ok=True, status="ok", exit_code=0).plot()


# --- synthetic views ---


def synthetic(minutes: float = 10.0, *, unit_ms: float = 1000.0) -> RunBundleData:
    """A long run: a unit a second, an append per 200 ms, a turn every 6 units."""
    dur = minutes * 60_000.0
    units = [
        UnitBlock(i, ("OMNI", "VISION", "AUDIO")[i % 3], i * unit_ms, (i + 1) * unit_ms,
                  i % 50 == 3, "clip")
        for i in range(int(dur / unit_ms))
    ]  # fmt: skip
    lateness = [LatenessPoint(k, (k + 1) * 200.0, (k % 7) * 0.5) for k in range(int(dur / 200))]
    decisions = [
        DecisionMark(u.index, "speak" if u.index % 6 == 0 else "listen", u.end_ms + 30, None, None)
        for u in units
    ]
    turns = []
    for n, u in enumerate((u for u in units if u.index % 6 == 0), start=1):
        user_end, heard = u.end_ms - 400, u.end_ms + 300
        cut = "barge_in" if n % 10 == 0 else None
        turns.append(TurnSpan(n, f"r{n}", u.index, heard, heard + 3000, cut, user_end,
                              heard - user_end, 200.0, 0.0, 700.0, "answer"))  # fmt: skip
    speech = [(t.user_end_ms - 1500, t.user_end_ms) for t in turns if t.user_end_ms is not None]
    markers = [Marker("commit", u.end_ms + 5, "commit") for u in units]
    markers += [Marker("error", dur / 2, "error x: y"), Marker("reconnect", dur / 2 + 10, "r")]
    view = RunView("synthetic", "ok", True, "m", None, None, dur, units, decisions, turns,
                   speech, "annotation", lateness, markers)  # fmt: skip
    columns = 2000
    t_ms = [dur * (k + 0.5) / columns for k in range(columns)]
    low = [-abs(math.sin(k / 7)) for k in range(columns)]
    high = [abs(math.sin(k / 5)) for k in range(columns)]
    wave = Envelope(t_ms, low, high)
    return RunBundleData(dir=Path("/nonexistent"), view=view, input_wave=wave, heard_wave=wave)


def test_a_ten_minute_run_is_drawn_with_few_artists_and_fast(tmp_path: Path) -> None:
    data = synthetic(10.0)
    view = data.view
    assert len(view.units) == 600 and len(view.lateness) == 3000
    started = time.perf_counter()
    fig = run_figure(data)
    out = save_png(fig, tmp_path / "long.png")
    elapsed = time.perf_counter() - started
    assert elapsed < 20.0, f"10-minute run took {elapsed:.1f} s"
    assert_png(out)
    axes = by_label(fig)
    assert paths(axes["units"], "units:") == 600
    assert len(collections(axes["units"], "units:")) == 6  # 3 kinds x (normal, fallback)
    fallback = collections(axes["units"], "units:OMNI:fallback")
    assert fallback and fallback[0].get_hatch()
    assert points(axes["decisions"], "speak") == 100 and points(axes["decisions"], "listen") == 500
    assert paths(axes["turns"], "latency") == 100
    assert paths(axes["heard"], "cuts") == 10
    assert paths(axes["events"], "commit") == 600 and paths(axes["events"], "error") == 1
    assert all(paths(ax, "alert:error") == 1 for n, ax in axes.items() if n != "events")
    # vectorised: the artist count does not grow with the units, appends or decisions
    assert sum(len(ax.get_children()) for ax in fig.axes) < 400
    assert axes["events"].get_xlim()[1] >= view.duration_ms / 1000.0


def test_a_long_runs_thumbnails_do_not_overlap(tmp_path: Path) -> None:
    data = synthetic(10.0)
    (tmp_path / "frames").mkdir()
    image = np.full((90, 160, 3), (30, 140, 220), np.uint8)
    units = []
    for u in data.view.units:
        name = f"{u.index}_0.jpg"
        cv2.imwrite(str(tmp_path / "frames" / name), image)
        data.thumbnails[name] = tmp_path / "frames" / name
        units.append(dataclasses.replace(u, frames=(FrameThumb(name, "base", 160, 90, None),)))
    data.view.units = units
    fig = run_figure(data, thumbnails=True)
    images = [a for a in by_label(fig)["frames"].get_children() if isinstance(a, AxesImage)]
    assert 3 <= len(images) < 60  # a readable few, not 600 slivers
    extents = sorted(img.get_extent()[:2] for img in images)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(extents))
    assert all((x0 * 1000.0) % 1000.0 == 0 for x0, _ in extents)  # each starts at its unit


def test_overlapping_latency_bars_get_their_own_lanes() -> None:
    assert lanes([(0.0, 5.0), (0.0, 1.0), (6.0, 1.0), (0.5, 2.0)]) == [0, 1, 0, 2]
    assert lanes([(0.0, 9.0)] * 6, most=4) == [0, 1, 2, 3, 0, 1]
    assert lanes([]) == []


def test_an_empty_run_still_draws_every_track(tmp_path: Path) -> None:
    view = RunView("empty", "unfinished", False, None, None, None, 0.0)
    view.warnings.append("result.json is missing")
    data = RunBundleData(dir=tmp_path, view=view)
    assert run_end_ms(data) == 1.0
    fig = run_figure(data, thumbnails=True)
    assert list(by_label(fig)) == list(RUN_TRACKS)
    assert "result.json is missing" in fig.get_suptitle()
    assert_png(save_png(fig, tmp_path / "empty.png"))


def test_save_png_leaves_the_old_file_when_saving_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "keep.png"
    target.write_bytes(b"old")
    fig = run_figure(synthetic(0.2))

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(fig, "savefig", broken)
    with pytest.raises(RuntimeError):
        save_png(fig, target)
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["keep.png"]


# --- eval ---


def write_eval(root: Path) -> list[dict[str, Any]]:
    """An eval output dir: two measured items, one timing-invalid, one failed."""

    def turn(latency: float, heard_ms: float = 500.0) -> dict[str, Any]:
        return {"latency_ms": latency, "server_ms": latency / 2, "overlap_ms": 10.0,
                "gap_ms": latency, "heard_ms": heard_ms}  # fmt: skip

    items = {
        "a": (True, True, "ok", [turn(300.0), turn(500.0)]),
        "b": (True, True, "ok", [turn(700.0), turn(900.0, heard_ms=0.0)]),
        "late": (True, False, "ok", [turn(5000.0)]),
        "bad": (False, None, "failed", [turn(6000.0)]),
    }
    rows = []
    for name, (ok, valid, status, turns) in items.items():
        bundle = root / "items" / name
        bundle.mkdir(parents=True)
        (bundle / "result.json").write_text(json.dumps({"ok": ok, "turns": turns}))
        rows.append({"id": name, "ok": ok, "timing_valid": valid, "status": status,
                     "bundle": f"items/{name}"})  # fmt: skip
    (root / "summary.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def test_eval_turns_pool_ok_timing_valid_items(tmp_path: Path) -> None:
    rows = write_eval(tmp_path)
    turns = eval_turns(tmp_path)
    assert sorted(t["latency_ms"] for t in turns) == [300.0, 500.0, 700.0, 900.0]
    assert eval_turns(tmp_path, rows[:1]) == eval_turns(str(tmp_path), rows)[:2]
    (tmp_path / "items" / "b" / "result.json").unlink()  # a vanished bundle is left out
    assert len(eval_turns(tmp_path)) == 2
    with pytest.raises(ReportInputError, match="no such directory"):
        eval_turns(tmp_path / "nowhere")
    (tmp_path / "summary.jsonl").unlink()
    with pytest.raises(ReportInputError, match=r"no summary\.jsonl"):
        eval_turns(tmp_path)


def test_eval_figure_histograms_and_status(tmp_path: Path) -> None:
    rows = write_eval(tmp_path)
    fig = eval_figure(rows, eval_turns(tmp_path, rows))
    axes = by_label(fig)
    assert set(axes) == {"latency_ms", "server_ms", "overlap_ms", "status"}

    def counted(name: str) -> float:
        return sum(p.get_height() for p in axes[name].patches if p.get_gid() == name)

    assert counted("latency_ms") == 4 and counted("server_ms") == 4
    assert counted("overlap_ms") == 3  # overlap is pooled over heard turns only
    bars = {t.get_text(): p.get_height() for t, p in
            zip(axes["status"].get_xticklabels(), axes["status"].patches, strict=True)}  # fmt: skip
    assert bars == {"ok": 3, "failed": 1}
    assert "1 timing-invalid" in axes["status"].get_title()
    assert_png(save_png(fig, tmp_path / "eval.png"))
    empty = by_label(eval_figure([], []))
    assert not empty["latency_ms"].patches and not empty["status"].patches


def test_eval_result_plot(tmp_path: Path) -> None:
    rows = write_eval(tmp_path)
    fig = EvalResult(tmp_path, summary={}, items=[], rows=rows, exit_code=1).plot()
    assert isinstance(fig, Figure) and "latency_ms" in by_label(fig)


# --- the extra ---


def test_missing_matplotlib_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError) as caught:
        run_figure(synthetic(0.1))
    assert (
        str(caught.value)
        == MISSING_EXTRA
        == ("plots need matplotlib: pip install 'duplex-client[report]'")
    )
    with pytest.raises(ImportError, match="duplex-client\\[report\\]"):
        eval_figure([], [])
    with pytest.raises(ImportError, match="duplex-client\\[report\\]"):
        RunResult(ok=True, status="ok", exit_code=0, bundle_dir=Path("/x")).plot()


def test_importing_the_package_does_not_import_matplotlib() -> None:
    code = (
        "import sys, duplex_client, duplex_client.run.result, duplex_client.eval.api,"
        " duplex_client.report.figure, duplex_client.report.figure_eval;"
        "print('matplotlib' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert done.stdout.strip() == "False"
