"""ImageFrameSource: one still picture held for every unit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from duplex_client.framing.sources import FrameSampler
from duplex_client.media import ImageFrameSource, open_clip
from tests.support.media_files import colour_frame, frame_index

cv2 = pytest.importorskip("cv2")


def decode(data: bytes) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)


def test_image_file_is_held_for_every_unit(tmp_path: Path) -> None:
    path = tmp_path / "still.png"
    cv2.imwrite(str(path), colour_frame(17, 160, 120))
    source = ImageFrameSource(path, frame_max_side=80, jpeg_quality=85)
    assert isinstance(source, FrameSampler)
    groups = [source.group_for_unit(s, s + 1000) for s in (0, 1000, 5000)]
    assert all(g.base is groups[0].base and g.held and g.composite is None for g in groups)
    image = decode(groups[0].base.data)
    assert image.shape == (60, 80, 3)
    assert frame_index(image) == 17
    assert groups[0].base.pts_ms == 0
    assert source.duration_ms == 0
    info = source.info()
    assert (info["kind"], info["path"], info["num_frames"], info["jpeg_quality"]) == (
        "image",
        str(path),
        1,
        85,
    )


def test_image_from_array(tmp_path: Path) -> None:
    grey = np.full((30, 40), 200, np.uint8)
    source = ImageFrameSource(grey)
    image = decode(source.group_for_unit(0, 1000).base.data)
    assert image.shape == (30, 40, 3)
    assert abs(float(image.mean()) - 200) < 3
    assert source.info()["path"] is None
    with pytest.raises(ValueError):
        ImageFrameSource(np.zeros((4, 4), np.float32))


def test_open_clip_treats_a_picture_as_a_still_camera(tmp_path: Path) -> None:
    path = tmp_path / "snap.jpg"
    cv2.imwrite(str(path), colour_frame(5))
    clip = open_clip(path)
    assert clip.audio is None
    assert isinstance(clip.frames, ImageFrameSource)
    group = clip.frames.group_for_unit(0, 1000)
    assert group is not None and frame_index(decode(group.base.data)) == 5
