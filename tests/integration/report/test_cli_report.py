"""`duplex-cli report` as a user runs it: pages written where it says, bad input in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cv2
import pytest

CLI = [str(Path(sys.executable).parent / "duplex-cli")]


def report(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "report", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_a_run_gets_its_page_and_a_png(runs: tuple[Path, Path], tmp_path: Path) -> None:
    out, png = tmp_path / "page.html", tmp_path / "tracks.png"
    done = report(str(runs[0]), "-o", str(out), "--png", str(png))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(out), str(png)]
    assert "run-data" in out.read_text(encoding="utf-8")
    image = cv2.imread(str(png))
    assert image is not None and image.shape[1] > 800 and image.std() > 10


def test_two_runs_get_a_comparison_here(runs: tuple[Path, Path], tmp_path: Path) -> None:
    done = report(str(runs[0]), str(runs[1]), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = tmp_path / f"compare_{runs[0].name}_{runs[1].name}.html"
    assert done.stdout.strip() == page.name and "compare-data" in page.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        ("missing", "no such directory"),
        ("a_file", "target: a file, not a run bundle (give the run's folder)"),
        ("plain_dir", "is not a run bundle (no input_timeline.json)"),
        ("old", "re-run it with this version"),
        ("eval_without_summary", "no summary.jsonl"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    runs: tuple[Path, Path], tmp_path: Path, make: str, message: str
) -> None:
    target = tmp_path / "target"
    if make == "plain_dir":
        target.mkdir()
    elif make == "old":
        target.mkdir()
        timeline = json.loads((runs[0] / "input_timeline.json").read_text(encoding="utf-8"))
        del timeline["schema_version"]
        (target / "input_timeline.json").write_text(json.dumps(timeline), encoding="utf-8")
    elif make == "eval_without_summary":
        target.mkdir()
        (target / "eval.json").write_text("{}", encoding="utf-8")
    elif make == "a_file":  # `report file.wav`
        target.write_bytes(b"RIFF")
    done = report(str(target))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not target.is_dir() or not (target / "report.html").exists()


def test_png_with_two_runs_is_refused(runs: tuple[Path, Path], tmp_path: Path) -> None:
    done = report(str(runs[0]), str(runs[1]), "--png", str(tmp_path / "x.png"))
    assert done.returncode == 2 and "--png draws one run" in done.stderr


def test_an_eval_gets_an_index_page_and_its_items_pages(tmp_path: Path) -> None:
    from tests.support.eval_output import OK_IDS, build_eval

    result = build_eval(tmp_path)
    png = tmp_path / "eval.png"
    done = report(str(result.output_dir), "--png", str(png))
    assert done.returncode == 0, done.stderr
    index = result.output_dir / "report.html"
    assert done.stdout.split() == [str(index), str(png)]
    assert "eval-data" in index.read_text(encoding="utf-8")
    for item in OK_IDS:
        assert (result.output_dir / "items" / item / "report.html").exists()
    assert "warning" in done.stderr  # the corrupt clip's item has no page, and says so
    image = cv2.imread(str(png))
    assert image is not None and image.std() > 10
