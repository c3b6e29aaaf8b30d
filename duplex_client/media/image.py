"""`ImageFrameSource`: a still image as a camera, the same frame for every unit (quick tests)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, ClassVar

from duplex_client.framing.sources import EncodedImage, FrameGroup
from duplex_client.media.errors import MediaError, check_file
from duplex_client.media.jpeg import encode_jpeg, resize_to_fit

if TYPE_CHECKING:
    import numpy.typing as npt


class ImageFrameSource:
    """A `FrameSampler` holding one picture (a file OpenCV reads, or a BGR/grey uint8 array).

    The video has no length (`duration_ms` 0), so every unit gets the image as a held base
    frame with pts 0, and never a composite. Re-usable: it keeps only the encoded JPEG.
    """

    #: Every unit gets the JPEG encoded once: planning costs less than a trip to a thread.
    in_memory: ClassVar[bool] = True

    def __init__(
        self,
        image: str | os.PathLike[str] | npt.NDArray[Any],
        *,
        frame_max_side: int = 0,
        jpeg_quality: int = 90,
    ) -> None:
        if not 1 <= jpeg_quality <= 100:
            raise ValueError(f"jpeg_quality must be 1..100, got {jpeg_quality}")
        if frame_max_side < 0:
            raise ValueError(f"frame_max_side must be >= 0, got {frame_max_side}")
        if isinstance(image, str | os.PathLike):
            self.path: str | None = os.fspath(image)
            pixels = _read_image(image)
        else:
            self.path = None
            pixels = _as_bgr(image)
        pixels = resize_to_fit(pixels, frame_max_side)
        self.frame_max_side = int(frame_max_side)
        self.jpeg_quality = int(jpeg_quality)
        self._base = EncodedImage(
            data=encode_jpeg(pixels, jpeg_quality),
            pts_ms=0,
            width=int(pixels.shape[1]),
            height=int(pixels.shape[0]),
            role="base",
        )

    @property
    def duration_ms(self) -> int:
        """Always 0: a still image has no timeline."""
        return 0

    @property
    def image(self) -> EncodedImage:
        """The encoded picture sent with every unit."""
        return self._base

    def group_for_unit(self, start_ms: int, end_ms: int) -> FrameGroup:
        """The image, held, for any unit."""
        return FrameGroup(base=self._base, held=True)

    def info(self) -> dict[str, Any]:
        """The timeline's `video` object for an image source."""
        return {
            "kind": "image",
            "path": self.path,
            "duration_ms": 0,
            "avg_fps": 0.0,
            "num_frames": 1,
            "rotation_deg": 0,
            "sampling": "unit_start",
            "fps": 0.0,
            "stack_frames": 1,
            "jpeg_quality": self.jpeg_quality,
            "frame_max_side": self.frame_max_side,
        }


def _read_image(path: str | os.PathLike[str]) -> npt.NDArray[Any]:
    import cv2
    import numpy as np

    check_file(path)
    data = np.fromfile(os.fspath(path), dtype=np.uint8)
    pixels = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if pixels is None:
        raise MediaError(path, "not an image OpenCV can read")
    out: npt.NDArray[Any] = pixels
    return out


def _as_bgr(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    import cv2
    import numpy as np

    if array.dtype != np.uint8 or array.ndim not in (2, 3) or array.size == 0:
        raise ValueError("image array must be a non-empty uint8 HxW or HxWxC array")
    if array.ndim == 2:
        out: npt.NDArray[Any] = cv2.cvtColor(array, cv2.COLOR_GRAY2BGR)
        return out
    channels = array.shape[2]
    if channels == 3:
        return array
    if channels == 4:
        out = cv2.cvtColor(array, cv2.COLOR_BGRA2BGR)
        return out
    if channels == 1:
        out = cv2.cvtColor(array[:, :, 0], cv2.COLOR_GRAY2BGR)
        return out
    raise ValueError(f"image array must have 1, 3 or 4 channels, got {channels}")
