"""The dominant colour of a camera frame, named from a small palette (OpenCV, HSV rules).

The image is decoded at reduced size and every pixel gets a palette name: dark pixels are
black, pale bright ones white, other unsaturated ones unnamed (grey scenes have no colour to
report), saturated ones by hue. The frame's colour is the name covering at least half of it.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

PALETTE: Final = ("red", "orange", "yellow", "green", "blue", "purple", "white", "black")
#: Share of the frame a palette colour must cover to count as dominant.
DOMINANT_SHARE: Final = 0.5
_MAX_SIDE: Final = 64
#: Upper hue bounds (OpenCV hue, 0-179) of the saturated colours, in order; red wraps around.
_HUES: Final = ((8, "red"), (22, "orange"), (35, "yellow"), (85, "green"), (130, "blue"))
_PURPLE_END: Final = 165
#: Representative BGR values, for swatches (examples, tests, benchmarks).
SWATCH_BGR: Final = {
    "red": (30, 30, 220),
    "orange": (0, 140, 255),
    "yellow": (0, 220, 240),
    "green": (40, 180, 40),
    "blue": (220, 60, 30),
    "purple": (160, 40, 140),
    "white": (250, 250, 250),
    "black": (10, 10, 10),
}


def _labels(hsv: NDArray[Any]) -> NDArray[np.int8]:
    """Palette index per pixel (-1: unnamed)."""
    h = hsv[..., 0].astype(np.int16)
    s = hsv[..., 1].astype(np.int16)
    v = hsv[..., 2].astype(np.int16)
    out = np.full(h.shape, -1, dtype=np.int8)
    hue_idx = np.full(h.shape, PALETTE.index("purple"), dtype=np.int8)
    for bound, name in reversed(_HUES):
        hue_idx[h < bound] = PALETTE.index(name)
    hue_idx[h >= _PURPLE_END] = PALETTE.index("red")
    saturated = (s >= 80) & (v >= 70)
    out[saturated] = hue_idx[saturated]
    out[(s < 50) & (v >= 190)] = PALETTE.index("white")
    out[v < 50] = PALETTE.index("black")
    return out


def dominant_color_bgr(image: NDArray[Any]) -> str | None:
    """The palette colour covering at least half of a BGR image, else None."""
    import cv2

    if image.ndim != 3 or image.shape[2] != 3 or not image.size:
        return None
    height, width = image.shape[:2]
    scale = _MAX_SIDE / max(height, width)
    if scale < 1:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    labels = _labels(cv2.cvtColor(image, cv2.COLOR_BGR2HSV))
    counts = np.bincount(labels[labels >= 0].ravel(), minlength=len(PALETTE))
    best = int(np.argmax(counts))
    if counts[best] < DOMINANT_SHARE * labels.size:
        return None
    return PALETTE[best]


def dominant_color(data: bytes) -> str | None:
    """The dominant palette colour of an encoded JPEG or PNG (None if undecodable or mixed)."""
    import cv2

    buf = np.frombuffer(data, dtype=np.uint8)
    if not buf.size:
        return None
    image = cv2.imdecode(buf, cv2.IMREAD_REDUCED_COLOR_4)
    if image is None:
        return None
    return dominant_color_bgr(image)


def swatch_jpeg(name: str, width: int = 64, height: int = 48) -> bytes:
    """A JPEG filled with the palette colour `name`."""
    import cv2

    image = np.empty((height, width, 3), dtype=np.uint8)
    image[:] = SWATCH_BGR[name]
    ok, encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    return bytes(encoded.tobytes())
