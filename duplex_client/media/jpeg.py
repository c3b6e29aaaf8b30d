"""Pictures for the wire: decoded frame → upright BGR array → JPEG (OpenCV); composites."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy.typing as npt
    from av.video.frame import VideoFrame

    BGR = npt.NDArray[Any]


def fit_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    """(width, height) scaled down so the longer side is at most `max_side` (0: unchanged)."""
    longest = max(width, height)
    if max_side <= 0 or longest <= max_side:
        return width, height
    scale = max_side / longest
    return max(1, round(width * scale)), max(1, round(height * scale))


def frame_to_bgr(
    frame: VideoFrame, *, rotation_deg: int = 0, max_side: int = 0, sar: Fraction | None = None
) -> BGR:
    """A decoded frame as an upright BGR array: square pixels, downscaled, display-rotated.

    `rotation_deg` is the display matrix's counter-clockwise angle (`VideoFrame.rotation`).
    Scaling and colour conversion happen in one swscale pass.
    """
    width, height = frame.width, frame.height
    if sar and sar > 0 and sar != 1:
        width = max(1, round(width * sar))
    width, height = fit_size(width, height, max_side)
    if (width, height) == (frame.width, frame.height):
        image: BGR = frame.to_ndarray(format="bgr24")
    else:
        scaled = frame.reformat(width=width, height=height, format="bgr24", interpolation="AREA")
        image = scaled.to_ndarray()
    return rotate(image, rotation_deg)


def rotate(image: BGR, rotation_deg: int) -> BGR:
    """Turn an image counter-clockwise by a multiple of 90 degrees."""
    import cv2

    quarter = round(rotation_deg / 90) % 4
    if quarter == 0:
        return image
    code = {1: cv2.ROTATE_90_COUNTERCLOCKWISE, 2: cv2.ROTATE_180, 3: cv2.ROTATE_90_CLOCKWISE}
    out: BGR = cv2.rotate(image, code[quarter])
    return out


def resize_to_fit(image: BGR, max_side: int) -> BGR:
    """An image downscaled (area interpolation) so its longer side is at most `max_side`."""
    import cv2

    height, width = image.shape[:2]
    size = fit_size(width, height, max_side)
    if size == (width, height):
        return image
    out: BGR = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    return out


def encode_jpeg(image: BGR, quality: int) -> bytes:
    """JPEG bytes of a BGR (or grey) image at `quality` (1-100)."""
    import cv2

    ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ValueError("OpenCV could not encode the image as JPEG")
    return bytes(buf)


def tile(images: list[BGR], width: int) -> BGR:
    """Sub-frames tiled row by row on a near-square grid that is `width` pixels wide.

    Each tile keeps the first image's aspect ratio at `width / columns` pixels wide;
    unused cells are black. One image is returned at `width` unchanged in shape.
    """
    import cv2
    import numpy as np

    if not images:
        raise ValueError("nothing to tile")
    cols = math.ceil(math.sqrt(len(images)))
    rows = math.ceil(len(images) / cols)
    first_h, first_w = images[0].shape[:2]
    tile_w = max(1, width // cols)
    tile_h = max(1, round(first_h * tile_w / first_w))
    canvas: BGR = np.zeros((rows * tile_h, cols * tile_w, 3), dtype=np.uint8)
    for i, image in enumerate(images):
        r, c = divmod(i, cols)
        cell: Any = image
        if cell.shape[:2] != (tile_h, tile_w):
            cell = cv2.resize(cell, (tile_w, tile_h), interpolation=cv2.INTER_AREA)
        canvas[r * tile_h : (r + 1) * tile_h, c * tile_w : (c + 1) * tile_w] = cell
    return canvas
