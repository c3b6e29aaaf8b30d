"""Frame thumbnails in the run bundle: `frames/<unit>_<k>.jpg`, small, one per image sent."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from duplex_cli.run_flags import run_options

from duplex_client.bundle.payloads import SENT_FRAMES_DIR, KeptPayloads
from duplex_client.bundle.thumbnails import ThumbnailWriter, make_thumbnail
from duplex_client.bundle.writer import RunBundle
from duplex_client.eval.api import changed_options
from duplex_client.eval.runner import EvalSettings, settings_record
from duplex_client.framing.plan import PlannedAppend
from duplex_client.framing.sources import EncodedImage, FrameGroup
from duplex_client.protocol.capabilities import UnitKind
from duplex_client.run.options import RunOptions
from duplex_client.run.stream import stream_clip
from duplex_client.server import ReferenceServer
from tests.e2e.helpers import run_cli
from tests.support.media_files import colour_frame, frame_index, write_clip


def jpeg(width: int, height: int, colour: int = 7) -> bytes:
    """A real JPEG of one palette colour."""
    ok, buf = cv2.imencode(".jpg", colour_frame(colour, width, height))
    assert ok
    return bytes(buf)


def closing(unit: int, *images: bytes) -> PlannedAppend:
    """An append closing unit `unit` that carries `images` (base, then composite)."""
    base = EncodedImage(images[0], 0)
    composite = EncodedImage(images[1], 0, role="composite") if len(images) > 1 else None
    return PlannedAppend(
        segment="clip", pcm=b"\0\0" * 3200, audio_start_samples=0, audio_end_samples=3200,
        duration_ms=200, audio_end_ms=200, is_speech=None,
        frames=FrameGroup(base, composite), unit_kind=UnitKind.OMNI, unit_index=unit,
        media_start_ms=0, media_end_ms=200,
    )  # fmt: skip


def size(path: Path) -> tuple[int, int]:
    """(width, height) of an image file."""
    pixels = cv2.imread(str(path))
    assert pixels is not None, path
    return pixels.shape[1], pixels.shape[0]


def test_the_writer_shrinks_to_160_keeps_small_ones_and_skips_what_does_not_decode(
    tmp_path: Path,
) -> None:
    writer = ThumbnailWriter(tmp_path)
    writer.record(closing(3, jpeg(640, 480), jpeg(100, 80)))
    writer.record(closing(5, b"\xff\xd8 not a jpeg", jpeg(90, 300)))
    writer.close()
    frames = tmp_path / "frames"
    assert sorted(p.name for p in frames.iterdir()) == ["3_0.jpg", "3_1.jpg", "5_1.jpg"]
    assert size(frames / "3_0.jpg") == (160, 120)  # longest side 160, aspect kept
    assert size(frames / "3_1.jpg") == (100, 80)  # never upscaled
    assert size(frames / "5_1.jpg") == (48, 160)
    assert frame_index(cv2.imread(str(frames / "3_0.jpg"))) == 7  # the picture, only smaller
    assert writer.written == 3
    (warning,) = writer.warnings
    assert "5_0.jpg" in warning and "\n" not in warning
    assert not [t for t in threading.enumerate() if t.name.startswith("duplex-thumbnails")]
    writer.record(closing(6, jpeg(64, 48)))  # after close: ignored, nothing raised
    assert not (frames / "6_0.jpg").exists()


def textured_jpeg(width: int, height: int) -> bytes:
    """A real JPEG of a picture with detail: gradients, stripes and noise."""
    rng = np.random.default_rng(3)
    y, x = np.mgrid[0:height, 0:width]
    pixels = np.stack([x * 255 // width, y * 255 // height, (x // 7 + y // 5) % 2 * 200], -1)
    pixels = np.clip(pixels + rng.integers(-20, 20, pixels.shape), 0, 255).astype(np.uint8)
    ok, buf = cv2.imencode(".jpg", pixels)
    assert ok
    return bytes(buf)


def decoded(data: bytes | None) -> Any:
    """The pixels of JPEG bytes."""
    assert data is not None
    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)


def test_a_jpeg_of_known_size_is_decoded_reduced_into_the_same_thumbnail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = textured_jpeg(1280, 720)
    whole = decoded(make_thumbnail(data))
    reads: list[int] = []
    imdecode = cv2.imdecode

    def spied(buf: Any, flags: int) -> Any:
        reads.append(flags)
        return imdecode(buf, flags)

    monkeypatch.setattr(cv2, "imdecode", spied)
    reduced = decoded(make_thumbnail(data, size=(1280, 720)))
    assert reads[0] == cv2.IMREAD_REDUCED_COLOR_8  # 160x90 straight from the DCT
    assert reduced.shape == whole.shape == (90, 160, 3)
    assert np.abs(reduced.astype(int) - whole.astype(int)).mean() < 4  # the same picture
    reads.clear()
    assert decoded(make_thumbnail(data, size=(1000, 720))).shape == (90, 160, 3)
    assert reads[:2] == [cv2.IMREAD_REDUCED_COLOR_4, cv2.IMREAD_COLOR]  # not that size: whole
    reads.clear()
    small = textured_jpeg(200, 150)
    assert decoded(make_thumbnail(small, size=(200, 150))).shape == (120, 160, 3)
    assert reads[0] == cv2.IMREAD_COLOR  # half of 200 is below 160: no reduction covers it


def test_a_png_frame_gets_a_jpeg_thumbnail_and_no_frames_no_folder(tmp_path: Path) -> None:
    ok, png = cv2.imencode(".png", colour_frame(2, 320, 200))
    assert ok
    thumb = make_thumbnail(bytes(png))
    assert thumb is not None and thumb[:2] == b"\xff\xd8"
    assert cv2.imdecode(np.frombuffer(thumb, np.uint8), cv2.IMREAD_COLOR).shape == (100, 160, 3)
    assert make_thumbnail(b"") is None
    writer = ThumbnailWriter(tmp_path)
    writer.close()  # nothing sent: no worker, no folder
    assert not (tmp_path / "frames").exists() and writer.written == 0


def test_a_bundle_opened_again_loses_the_earlier_runs_thumbnails(tmp_path: Path) -> None:
    (tmp_path / "frames").mkdir()
    (tmp_path / "frames" / "4_0.jpg").write_bytes(jpeg(64, 48))
    RunBundle(tmp_path).finish({"ok": True})
    assert not (tmp_path / "frames").exists()
    (tmp_path / "frames").mkdir()
    (tmp_path / "frames" / "4_0.jpg").write_bytes(jpeg(64, 48))
    (tmp_path / "frames" / "notes.txt").write_text("mine")  # not a bundle file: it stays
    RunBundle(tmp_path).finish({"ok": True})
    assert [p.name for p in (tmp_path / "frames").iterdir()] == ["notes.txt"]


def test_thumbnails_are_on_by_default_and_the_flag_turns_them_off() -> None:
    assert RunOptions().thumbnails is True
    assert run_options({}).thumbnails is True
    assert run_options({"no_thumbnails": True}).thumbnails is False


def test_an_eval_recorded_before_the_option_existed_sees_no_change(tmp_path: Path) -> None:
    record = settings_record(EvalSettings(), RunOptions())
    older = {**record, "options": {k: v for k, v in record["options"].items() if k != "thumbnails"}}
    (tmp_path / "eval.json").write_text(json.dumps(older), encoding="utf-8")
    assert changed_options(tmp_path / "eval.json", record) == ""
    off = settings_record(EvalSettings(), RunOptions(thumbnails=False))
    assert changed_options(tmp_path / "eval.json", off) == "thumbnails True → False"


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 s of 320x240 video at 10 fps (frame i shows palette(i)) with a soundtrack."""
    path = tmp_path_factory.mktemp("media") / "clip.mp4"
    return write_clip(path, video_seconds=2.0, audio_seconds=2.0, fps=10, size=(320, 240))


async def _stream(url: str, clip: Path, out: Path, **options: Any) -> dict[str, Any]:
    result = await stream_clip(
        url, input_video=str(clip), tail_silence_s=0.4, realtime=False, output_dir=out,
        video_fps=2.0, stack_frames=3, **options,
    )  # fmt: skip
    assert result.ok, result.error
    timeline: dict[str, Any] = json.loads((out / "input_timeline.json").read_text())
    return timeline


async def test_a_stream_leaves_one_thumbnail_per_sent_frame(clip: Path, tmp_path: Path) -> None:
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        timeline = await _stream(server.url, clip, tmp_path / "on", keep_payloads=True)
        off = tmp_path / "off"
        await _stream(server.url, clip, off, thumbnails=False)
    run = tmp_path / "on"
    expected = {
        f"{row['unit_index']}_{k}.jpg": frame
        for row in timeline["appends"]
        if row["unit_index"] is not None
        for k, frame in enumerate(row["frames"])
    }
    assert sum(f["role"] == "composite" for f in expected.values()) >= 2  # base and composite
    assert sorted(p.name for p in (run / "frames").iterdir()) == sorted(expected)
    for name, frame in expected.items():
        width, height = size(run / "frames" / name)
        assert max(width, height) == min(160, max(frame["width"], frame["height"]))
        if frame["role"] == "base":  # the frame sent, shrunk: frame i of the clip is palette(i)
            assert (width, height) == (160, 120)
            shown = frame_index(cv2.imread(str(run / "frames" / name)))
            assert shown == frame["source_pts_ms"] // 100
    # --keep-payloads keeps the full-size images apart, and a replay reads them from there
    kept = KeptPayloads(run, timeline["appends"])
    assert kept.frames_dir == run / SENT_FRAMES_DIR
    assert len(list((run / SENT_FRAMES_DIR).glob("*.jpg"))) == len(expected)
    for row in timeline["appends"]:
        for frame in row["frames"]:
            assert hashlib.sha256(kept.image(row, frame)).hexdigest() == frame["sha256"]
    assert not (off / "frames").exists()


async def test_the_cli_no_thumbnails_flag_leaves_the_frames_out(clip: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        done = await run_cli(
            "--url", server.url, "--input-video", str(clip), "--burst", "--no-thumbnails",
            "--output-dir", str(run), "-q",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (run / "result.json").exists() and not (run / "frames").exists()
