"""Decoding less (non-reference frames skipped) picks the same frames and the same JPEG bytes.

The old path (`cursor.SKIP_NONREF = False`: every frame from the keyframe on decoded) and the
new one sample the same clips, GOPs of 1, 30 and 300 frames, with and without B-frames and
with a variable frame rate, for every unit of several grids: same source pts, same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from duplex_client.media import cursor
from duplex_client.media.frames import ClipFrames
from tests.support.media_files import write_moving_clip


def sample(path: Path, fps: float, unit_ms: int, stack: int) -> tuple[list[Any], int]:
    """Every unit's (pts, bytes) of base and composite, and the frames decoded."""
    out: list[Any] = []
    with ClipFrames(path, fps=fps, stack_frames=stack, jpeg_quality=85) as frames:
        end = frames.duration_ms + unit_ms
        for start in range(0, end, unit_ms):
            group = frames.group_for_unit(start, start + unit_ms)
            assert group is not None
            comp = group.composite
            out.append(
                (
                    start,
                    group.base.pts_ms,
                    group.base.data,
                    group.held,
                    None if comp is None else (comp.pts_ms, comp.data),
                )
            )
        decoded = frames.decoded_frames
    return out, decoded


def vfr_times(count: int) -> list[int]:
    gaps = [33, 50, 17, 100, 33, 66, 25, 40]
    t, times = 0, []
    for i in range(count):
        times.append(t)
        t += gaps[i % len(gaps)]
    return times


CLIPS: dict[str, dict[str, Any]] = {
    "gop1": {"keyint": 1},
    "gop30_bframes": {"keyint": 30},
    "gop30_no_bframes": {"keyint": 30, "bframes": False},
    "gop300_bframes": {"keyint": 300},
    "vfr_gop60": {"keyint": 60, "vfr_ms": vfr_times(260)},
}


@pytest.mark.parametrize("name", sorted(CLIPS))
@pytest.mark.parametrize(
    ("fps", "unit_ms", "stack"), [(1.0, 1000, 1), (2.5, 600, 1), (1.0, 1000, 3)]
)
def test_same_frames_and_bytes_as_decoding_everything(
    name: str,
    fps: float,
    unit_ms: int,
    stack: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = write_moving_clip(tmp_path / f"{name}.mp4", **CLIPS[name])
    new, decoded_new = sample(path, fps, unit_ms, stack)
    monkeypatch.setattr(cursor, "SKIP_NONREF", False)
    old, decoded_old = sample(path, fps, unit_ms, stack)
    assert [u[:2] for u in new] == [u[:2] for u in old]  # the same source frame per unit
    assert new == old  # and the same JPEG bytes, composites included
    assert decoded_new <= decoded_old


def test_long_gops_decode_fewer_frames(tmp_path: Path) -> None:
    path = write_moving_clip(tmp_path / "long.mp4", keyint=300)
    _, decoded_new = sample(path, 1.0, 1000, 1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cursor, "SKIP_NONREF", False)
        _, decoded_old = sample(path, 1.0, 1000, 1)
    assert decoded_new < decoded_old
