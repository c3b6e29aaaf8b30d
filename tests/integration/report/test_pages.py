"""The pages' structure: what a page embeds is the bundle's data, self-contained and small.

Golden-structure tests on real bundles from scripted runs; no pixels.
"""

from __future__ import annotations

import json
import re
import shutil
import wave
from pathlib import Path
from typing import Any

import pytest

from duplex_client.report.bundle_reader import ReportInputError, load_run_bundle
from duplex_client.report.compare_page import write_compare_report
from duplex_client.report.run_page import write_run_report


def embedded(page: str, element_id: str) -> Any:
    """The JSON a page embeds in `<script type="application/json" id=...>`."""
    match = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', page)
    assert match is not None, element_id
    return json.loads(match.group(1).replace("<\\/", "</"))


def read(bundle: Path, name: str) -> Any:
    return json.loads((bundle / name).read_text(encoding="utf-8"))


def test_the_page_embeds_the_bundles_data(runs: tuple[Path, Path], tmp_path: Path) -> None:
    bundle = runs[0]
    page = write_run_report(bundle, tmp_path / "a.html").read_text(encoding="utf-8")
    data = embedded(page, "run-data")
    timeline, result = read(bundle, "input_timeline.json"), read(bundle, "result.json")
    closing = [a for a in timeline["appends"] if a["unit_kind"] is not None]
    assert [(u["index"], u["kind"], u["end_ms"]) for u in data["units"]] == [
        (a["unit_index"], a["unit_kind"], a["media_end_ms"]) for a in closing
    ]
    # Units tile the clip: each starts where the previous one ended.
    assert [u["start_ms"] for u in data["units"]] == [0, *[u["end_ms"] for u in data["units"]][:-1]]
    assert [(d["unit_index"], d["decision"], d["at_ms"]) for d in data["decisions"]] == [
        (d["unit_index"], d["decision"], d["decided_ms"]) for d in result["decisions"]
    ]
    keys = ("response_id", "unit_index", "heard_start_ms", "heard_end_ms", "latency_ms", "cut")
    assert [{k: t[k] for k in keys} for t in data["turns"]] == [
        {k: t[k] for k in keys} for t in result["turns"]
    ]
    assert [list(s) for s in data["user_speech"]] == [
        [s["start_ms"], s["end_ms"]] for s in result["user_speech"]
    ]
    assert len(data["lateness"]) == len(timeline["appends"])
    assert {m["kind"] for m in data["markers"]} == {"commit", "server_commit"}
    # Every frame sent has its thumbnail on the page.
    sent = sum(len(a["frames"]) for a in closing)
    assert sent > 0 and sum(len(u["frames"]) for u in data["units"]) == sent
    assert page.count("data:image/jpeg;base64,") == sent
    assert data["warnings"] == []


def test_the_page_is_self_contained(runs: tuple[Path, Path], tmp_path: Path) -> None:
    page = write_run_report(runs[0], tmp_path / "a.html").read_text(encoding="utf-8")
    assert not re.search(r"<(script|link|img|audio|source)[^>]+(src|href)=\"(?!data:)", page)
    assert '<audio id="player"' in page and "data:audio/ogg;base64," in page
    assert "Bokeh" in page and (tmp_path / "a.html").stat().st_size < 5_000_000


def test_no_thumbnails_leaves_frames_out(runs: tuple[Path, Path], tmp_path: Path) -> None:
    out = write_run_report(runs[0], tmp_path / "a.html", thumbnails=False)
    page = out.read_text(encoding="utf-8")
    assert "data:image/jpeg" not in page
    assert all(u["frames"] == [] for u in embedded(page, "run-data")["units"])


def test_the_comparison_lists_every_difference(runs: tuple[Path, Path], tmp_path: Path) -> None:
    page = write_compare_report(*runs, tmp_path / "c.html").read_text(encoding="utf-8")
    data = embedded(page, "compare-data")
    found = {(d["kind"], d["unit_index"]) for d in data["differences"]}
    assert found == {
        ("decision", 2), ("decision", 3), ("latency", 1), ("only_in_a", 3), ("only_in_b", 2),
    }  # fmt: skip
    latency = next(d for d in data["differences"] if d["kind"] == "latency")
    moved = float(re.search(r"\(([+-][\d.]+)\)", latency["b"]).group(1))  # type: ignore[union-attr]
    assert 300 < moved < 500, latency  # B answered unit 1 400 ms later
    assert "same input" in page
    assert page.count('<tr class="turn diff"') == len(data["differences"])


def test_a_run_compared_with_itself_has_no_differences(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    page = write_compare_report(runs[0], runs[0], tmp_path / "c.html").read_text(encoding="utf-8")
    assert embedded(page, "compare-data")["differences"] == []
    assert "no differences" in page


def copy_bundle(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_a_truncated_events_file_is_drawn_with_a_warning(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    bundle = copy_bundle(runs[0], tmp_path / "killed")
    lines = (bundle / "events.jsonl").read_bytes().splitlines(keepends=True)
    (bundle / "events.jsonl").write_bytes(b"".join(lines[:-3]) + lines[-3][:25])
    (bundle / "result.json").unlink()
    page = write_run_report(bundle, tmp_path / "k.html").read_text(encoding="utf-8")
    data = embedded(page, "run-data")
    assert any(f"drawn up to line {len(lines) - 3}" in w for w in data["warnings"])
    assert any("result.json is missing" in w for w in data["warnings"])
    assert page.count('class="warning"') == 2
    assert len(data["units"]) == 4  # the timeline is still drawn


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("no_timeline", "is not a run bundle (no input_timeline.json)"),
        ("old_schema", "bundle schema 0 is older than this duplex-client reads (1); re-run it"),
        ("new_schema", "bundle schema 9 is newer than this duplex-client reads (1); upgrade"),
        ("no_turns", "has no turn metrics (written by an older duplex-client); re-run it"),
        ("bad_json", "result.json: not readable JSON"),
    ],
)
def test_bad_bundles_are_refused_in_one_line(
    runs: tuple[Path, Path], tmp_path: Path, change: str, message: str
) -> None:
    bundle = copy_bundle(runs[0], tmp_path / "b")
    timeline = read(bundle, "input_timeline.json")
    if change == "no_timeline":
        (bundle / "input_timeline.json").unlink()
    elif change in ("old_schema", "new_schema"):
        timeline["schema_version"] = 0 if change == "old_schema" else 9
        (bundle / "input_timeline.json").write_text(json.dumps(timeline), encoding="utf-8")
    elif change == "no_turns":
        result = read(bundle, "result.json")
        del result["turns"], result["timing"]
        (bundle / "result.json").write_text(json.dumps(result), encoding="utf-8")
    else:
        (bundle / "result.json").write_text("{", encoding="utf-8")
    with pytest.raises(ReportInputError) as caught:
        load_run_bundle(bundle)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_corrupt_mix_loses_the_audio_not_the_page(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    bundle = copy_bundle(runs[0], tmp_path / "bad_audio")
    (bundle / "conversation.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    page = write_run_report(bundle, tmp_path / "p.html").read_text(encoding="utf-8")
    data = embedded(page, "run-data")
    assert any(w.startswith("audio not drawn:") for w in data["warnings"])
    assert '<audio id="player"' not in page and len(data["units"]) == 4


@pytest.mark.parametrize(
    ("keep", "note"),
    [
        (0.5, "conversation.wav is cut short: it holds"),
        (0.0, "conversation.wav holds no audio (its header declares"),
    ],
    ids=["cut in half", "header only"],
)
def test_a_cut_mix_is_noted_not_drawn_as_an_empty_track(
    runs: tuple[Path, Path], tmp_path: Path, keep: float, note: str
) -> None:
    """The page says the track is incomplete instead of drawing silence (issue 32)."""
    bundle = copy_bundle(runs[0], tmp_path / "cut")
    wav = bundle / "conversation.wav"
    data = wav.read_bytes()
    wav.write_bytes(data[: 44 + int((len(data) - 44) * keep)])
    loaded = load_run_bundle(bundle)
    (said,) = [w for w in loaded.view.warnings if "conversation.wav" in w]
    assert said.startswith(note), said
    assert loaded.input_wave is not None and loaded.heard_wave is not None
    if keep:  # what it holds is drawn, as far as it goes
        with wave.open(str(runs[0] / "conversation.wav")) as whole:
            whole_ms = 1000 * whole.getnframes() / whole.getframerate()
        assert 0.4 * whole_ms < max(loaded.input_wave.t_ms) < 0.6 * whole_ms
