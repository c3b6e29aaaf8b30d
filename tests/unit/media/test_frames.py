"""ClipFrames: fps-grid sampling, order, held frames, rotation, downscale, JPEG, composites."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duplex_client.framing.sources import FrameSampler
from duplex_client.media import ClipFrames
from duplex_client.media.cursor import VideoCursor
from tests.support.media_files import frame_index

cv2 = pytest.importorskip("cv2")


def decode(data: bytes) -> Any:
    """JPEG bytes → BGR array."""
    assert data[:3] == b"\xff\xd8\xff"
    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)


def base_index(frames: ClipFrames, start_ms: int, end_ms: int) -> int:
    group = frames.group_for_unit(start_ms, end_ms)
    assert group is not None
    return frame_index(decode(group.base.data)[8:, 8:])


def test_samples_one_frame_per_second_in_order(silent_clip: Path) -> None:
    with ClipFrames(silent_clip) as frames:
        assert isinstance(frames, FrameSampler)
        groups = [frames.group_for_unit(s, s + 1000) for s in range(0, 5000, 1000)]
    assert all(g is not None for g in groups)
    seen = [(frame_index(decode(g.base.data)), g.base.pts_ms, g.held) for g in groups if g]
    # 10 fps source: the frames shown at 0, 1 and 2 s are frames 0, 10, 20; then held.
    assert seen == [(0, 0, False), (10, 1000, False), (20, 2000, False)] + [(20, 2000, True)] * 2


def test_unit_takes_latest_sampled_frame_at_or_before_its_start(silent_clip: Path) -> None:
    with ClipFrames(silent_clip, fps=2.0) as frames:
        got = [base_index(frames, s, s + 200) for s in range(0, 3000, 200)]
    # Grid at 0, 500, 1000, ... ms: units starting at 0..400 get frame 0, 600..800 frame 5...
    assert got == [0, 0, 0, 5, 5, 10, 10, 10, 15, 15, 20, 20, 20, 25, 25]


def test_group_metadata_and_info(silent_clip: Path) -> None:
    frames = ClipFrames(silent_clip, fps=1.0, jpeg_quality=75, frame_max_side=32)
    group = frames.group_for_unit(0, 1000)
    assert group is not None
    assert (group.base.width, group.base.height, group.base.role) == (32, 24, "base")
    assert decode(group.base.data).shape == (24, 32, 3)
    assert frames.duration_ms == 3000
    assert frames.info() == {
        "kind": "file",
        "path": str(silent_clip),
        "duration_ms": 3000,
        "avg_fps": 10.0,
        "num_frames": 30,
        "rotation_deg": 0,
        "sampling": "unit_start",
        "fps": 1.0,
        "stack_frames": 1,
        "jpeg_quality": 75,
        "frame_max_side": 32,
    }
    frames.close()


def red_box(image: Any) -> tuple[int, int, int, int]:
    red = (image[:, :, 2] > 180) & (image[:, :, 1] < 80) & (image[:, :, 0] < 80)
    ys, xs = np.nonzero(red)
    return int(ys.min()), int(ys.max()), int(xs.min()), int(xs.max())


def test_rotated_clip_comes_out_upright(portrait_clip: Path) -> None:
    with ClipFrames(portrait_clip) as frames:
        group = frames.group_for_unit(0, 1000)
        assert frames.info()["rotation_deg"] == -90
    assert group is not None
    image = decode(group.base.data)
    assert image.shape == (64, 48, 3)
    assert (group.base.width, group.base.height) == (48, 64)
    # Turned 90° clockwise for display (as ffmpeg shows it): the marker is now top-right.
    top, _, left, _ = red_box(image)
    assert top < 4 and left > 36


@pytest.mark.parametrize(
    ("matrix", "rotation", "shape", "corner"),
    [
        # Where ffmpeg 5.1 shows the top-left marker of the stored 64x48 frame.
        ([0, -65536, 0, 65536, 0, 0, 0, 0, 1 << 30], 90, (64, 48, 3), "bottom-left"),
        ([-65536, 0, 0, 0, -65536, 0, 0, 0, 1 << 30], 180, (48, 64, 3), "bottom-right"),
    ],
)
def test_other_rotations_match_ffmpeg(
    make_clip: Callable[..., Path],
    matrix: list[int],
    rotation: int,
    shape: tuple[int, int, int],
    corner: str,
) -> None:
    path = make_clip("turned.mp4", video_seconds=1.0, matrix=matrix, marker=True)
    with ClipFrames(path) as frames:
        group = frames.group_for_unit(0, 1000)
        assert frames.info()["rotation_deg"] == rotation
    assert group is not None
    image = decode(group.base.data)
    assert image.shape == shape
    _, bottom, left, right = red_box(image)
    height, width = shape[:2]
    assert bottom > height - 4
    assert (left < 4) if corner == "bottom-left" else (right > width - 4)


def test_rotation_with_downscale(portrait_clip: Path) -> None:
    with ClipFrames(portrait_clip, frame_max_side=32) as frames:
        group = frames.group_for_unit(0, 1000)
    assert group is not None
    assert decode(group.base.data).shape == (32, 24, 3)


def test_jpeg_quality_is_applied(silent_clip: Path, make_clip: Callable[..., Path]) -> None:
    noisy = make_clip("noisy.mp4", size=(160, 120))
    sizes = []
    for quality in (20, 95):
        with ClipFrames(noisy, jpeg_quality=quality) as frames:
            group = frames.group_for_unit(0, 1000)
            assert group is not None
            sizes.append(len(group.base.data))
    assert sizes[0] < sizes[1]


def test_composite_tiles_interior_subframes(silent_clip: Path) -> None:
    with ClipFrames(silent_clip, stack_frames=3) as frames:
        group = frames.group_for_unit(1000, 2000)
    assert group is not None and group.composite is not None
    assert group.composite.role == "composite"
    assert group.composite.pts_ms == (1300, 1600)
    assert len(group.images) == 2
    tiles = decode(group.composite.data)
    assert tiles.shape == (24, 64, 3)
    assert [frame_index(tiles[:, :32]), frame_index(tiles[:, 32:])] == [13, 16]
    assert frame_index(decode(group.base.data)) == 10


def test_composite_keeps_only_subframes_inside_the_clip(silent_clip: Path) -> None:
    with ClipFrames(silent_clip, stack_frames=4) as frames:
        inside = frames.group_for_unit(2000, 4000)
        past = frames.group_for_unit(4000, 5000)
    assert inside is not None and inside.composite is not None
    assert inside.composite.pts_ms == (2500,)  # 3000 and 3500 ms are past the 3 s video
    assert past is not None and past.held and past.composite is None


def test_grid_frames_survive_composites_of_offset_units(silent_clip: Path) -> None:
    # Units [500,1500), [1500,2500): composites pass 1000 ms before it is a base.
    with ClipFrames(silent_clip, stack_frames=4) as frames:
        first = frames.group_for_unit(500, 1500)
        second = frames.group_for_unit(1500, 2500)
    assert first is not None and second is not None and first.composite is not None
    assert first.composite.pts_ms == (700, 1000, 1200)
    assert (first.base.pts_ms, second.base.pts_ms) == (0, 1000)
    assert frame_index(decode(second.base.data)) == 10


def test_earlier_start_restarts_decoding(silent_clip: Path) -> None:
    with ClipFrames(silent_clip) as frames:
        assert base_index(frames, 2000, 3000) == 20
        assert base_index(frames, 0, 1000) == 0
        assert base_index(frames, 1000, 2000) == 10


@pytest.mark.parametrize("bframes", [True, False])
def test_keyframe_skipping_matches_decoding_everything(
    make_clip: Callable[..., Path], bframes: bool
) -> None:
    path = make_clip("gop.mp4", video_seconds=4.0, fps=10, keyint=4, bframes=bframes)
    with ClipFrames(path, fps=1.0) as frames:
        got = [base_index(frames, s, s + 500) for s in range(0, 4000, 500)]
        dropped, decoded = frames.dropped_packets, frames.decoded_frames
    assert got == [0, 0, 10, 10, 20, 20, 30, 30]
    # Keyframes every 4 frames: packets before the keyframe preceding each sample are
    # dropped undecoded.
    assert dropped > 0 and decoded <= 20


def test_one_decode_per_sample_when_keyframes_sit_on_the_grid(
    make_clip: Callable[..., Path],
) -> None:
    path = make_clip("gop1s.mp4", video_seconds=4.0, fps=10, keyint=10)
    with ClipFrames(path, fps=1.0) as frames:
        got = [base_index(frames, s, s + 1000) for s in range(0, 4000, 1000)]
        decoded = frames.decoded_frames
    assert got == [0, 10, 20, 30]
    # Each keyframe is drained at once (no frame decoded past it) except the last sample's,
    # which has no later keyframe to jump to and decodes one frame ahead.
    assert decoded == 5


def test_decoding_holds_few_frames(
    make_clip: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Keyframes every 1.5 s: the sample at 1 s decodes frames 0..10 and then drains.
    path = make_clip("gop15.mp4", video_seconds=4.0, fps=10, keyint=15)
    queued: list[int] = []
    push = VideoCursor._push

    def spy(self: VideoCursor, frame: Any) -> None:
        push(self, frame)
        queued.append(len(self._queue))

    monkeypatch.setattr(VideoCursor, "_push", spy)
    with ClipFrames(path, fps=1.0) as frames:
        got = [base_index(frames, s, s + 1000) for s in range(0, 4000, 1000)]
    assert got == [0, 10, 20, 30]
    assert len(queued) > 10 and max(queued) <= 5  # memory: never a second's worth of frames


def test_variable_frame_rate(make_clip: Callable[..., Path]) -> None:
    times = [0, 100, 150, 900, 1000, 1010, 1700, 2600, 2700, 2950]
    path = make_clip("vfr.mp4", vfr_ms=times, fps=30)
    with ClipFrames(path, fps=2.0) as frames:
        got = [frames.group_for_unit(s, s + 500) for s in range(0, 3000, 500)]
    shown = [(frame_index(decode(g.base.data)), g.base.pts_ms) for g in got if g]
    # Grid 0, 500, 1000, 1500, 2000, 2500 ms → frames shown then: 0, 2, 4, 5, 6, 6.
    assert shown == [(0, 0), (2, 150), (4, 1000), (5, 1010), (6, 1700), (6, 1700)]
    assert not any(g.held for g in got if g)


def test_units_past_the_end_hold_the_last_grid_frame(silent_clip: Path) -> None:
    # fps 2 with 1 s units: the 2.5 s grid frame is never a base, but it is the last
    # frame sampled inside the 3 s video, so it is what later units hold.
    with ClipFrames(silent_clip, fps=2.0) as frames:
        inside = frames.group_for_unit(2000, 3000)
        past = frames.group_for_unit(3000, 4000)
    assert inside is not None and not inside.held and inside.base.pts_ms == 2000
    assert past is not None and past.held and past.base.pts_ms == 2500
    assert frame_index(decode(past.base.data)) == 25


def _shown_at(times: list[Fraction], t: Fraction) -> int:
    return max([i for i, x in enumerate(times) if x <= t], default=0)


@pytest.mark.parametrize(
    ("clip", "fps", "stack", "first", "period"),
    [
        ({"keyint": 5}, 3.0, 4, 500, 500),
        ({"keyint": 3, "bframes": False, "fps": 15}, 2.0, 1, 200, 1000),
        (
            {"vfr_ms": [0, 90, 400, 420, 1300, 1350, 1990, 2000, 2800, 2990], "bframes": False},
            1.0,
            3,
            1000,
            700,
        ),
    ],
)
def test_sampling_matches_decoding_every_frame(
    make_clip: Callable[..., Path],
    clip: dict[str, Any],
    fps: float,
    stack: int,
    first: int,
    period: int,
) -> None:
    import av

    path = make_clip("any.mp4", **clip)
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        tb = stream.time_base
        packets = [(p.pts, p.duration) for p in container.demux(stream) if p.size]
        container.seek(0)
        times = [Fraction(f.pts) * tb for f in container.decode(stream)]
    # The video ends where its last frame stops being shown: pts + duration, per the file.
    end = max(Fraction(pts + duration) * tb for pts, duration in packets)
    rate = Fraction(fps)
    with ClipFrames(path, fps=fps, stack_frames=stack) as frames:
        start = 0
        while start < 5000:
            stop = start + (first if start == 0 else period)
            group = frames.group_for_unit(start, stop)
            assert group is not None
            s = Fraction(start, 1000)
            k = min(int(s * rate), int(end * rate - Fraction(1, 10**9)))
            want = _shown_at(times, k / rate)
            assert (frame_index(decode(group.base.data)), group.held) == (want, s >= end)
            subs = [s + Fraction(stop - start, 1000) * j / stack for j in range(1, stack)]
            inside = [round(times[_shown_at(times, t)] * 1000) for t in subs if t < end]
            if s < end and inside:
                assert group.composite is not None
                assert group.composite.pts_ms == tuple(inside)
            else:
                assert group.composite is None
            start = stop
