"""Small JPEG thumbnails of the frames a run sent, kept in the bundle's `frames/`.

`frames/<unit>_<k>.jpg` is image `k` (0-based: the base first, then the composite) of the
append that closed unit `<unit>` (frames only ride unit-closing appends), its longest side at
most 160 px (never upscaled), aspect kept, JPEG quality 75. `make_thumbnail` is the pure
core; `ThumbnailWriter` decodes, resizes and writes in one worker thread, never on the event
loop that paces the stream. A JPEG whose size is known is decoded at the smallest scale
(1/2, 1/4 or 1/8, libjpeg's DCT scaling) that still covers the thumbnail: a 720p frame's
thumbnail then costs about a sixth of a full decode and resize.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from duplex_client.bundle.layout import THUMBNAILS_DIR, BundleLayout, thumbnail_name
from duplex_client.framing.plan import PlannedAppend

__all__ = [
    "THUMBNAILS_DIR",
    "THUMBNAIL_MAX_SIDE",
    "THUMBNAIL_QUALITY",
    "ThumbnailWriter",
    "make_thumbnail",
    "remove_thumbnails",
    "thumbnail_of",
]

#: The longest side of a thumbnail, in pixels.
THUMBNAIL_MAX_SIDE = 160
#: The JPEG quality thumbnails are encoded at.
THUMBNAIL_QUALITY = 75


def remove_thumbnails(bundle_dir: Path) -> None:
    """Delete an earlier run's `frames/*.jpg`, and the folder if that empties it."""
    folder = BundleLayout(bundle_dir).thumbnails
    for old in folder.glob("*.jpg"):
        old.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # absent, or holding something not ours
        folder.rmdir()


#: Thumbnails made in this process, by the sha256 of the image: the same frame sent again (an
#: eval's repeat, another endpoint, a replay) is not decoded and encoded again. Bounded.
_MADE: OrderedDict[tuple[str, tuple[int, int] | None, int, int], bytes] = OrderedDict()
_MADE_MAX = 4096
_MADE_LOCK = threading.Lock()


def thumbnail_of(
    data: bytes,
    *,
    size: tuple[int, int] | None = None,
    max_side: int = THUMBNAIL_MAX_SIDE,
    quality: int = THUMBNAIL_QUALITY,
) -> bytes | None:
    """`make_thumbnail`, remembered for the last few thousand images this process sent."""
    # the size picks the decode (reduced or whole): a thumbnail depends on it, so does its key
    key = (hashlib.sha256(data).hexdigest(), size, max_side, quality)
    with _MADE_LOCK:
        made = _MADE.get(key)
        if made is not None:
            _MADE.move_to_end(key)
            return made
    made = make_thumbnail(data, size=size, max_side=max_side, quality=quality)
    if made is not None:
        with _MADE_LOCK:
            _MADE[key] = made
            while len(_MADE) > _MADE_MAX:
                _MADE.popitem(last=False)
    return made


def make_thumbnail(
    data: bytes,
    *,
    size: tuple[int, int] | None = None,
    max_side: int = THUMBNAIL_MAX_SIDE,
    quality: int = THUMBNAIL_QUALITY,
) -> bytes | None:
    """JPEG bytes of an encoded image shrunk to fit `max_side` (None: not decodable).

    `size` is the image's (width, height) when known: a JPEG is then decoded at a reduced
    scale (falling back to a full decode when the image is not the size it was said to be).
    """
    import cv2
    import numpy as np

    from duplex_client.media.jpeg import encode_jpeg, fit_size, resize_to_fit

    if not data:
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    if size is not None and data[:2] == b"\xff\xd8" and min(size) > 0:
        fit = fit_size(*size, max_side)
        pixels = _decode_reduced(buf, size, fit)
        if pixels is not None:
            if (pixels.shape[1], pixels.shape[0]) != fit:
                pixels = cv2.resize(pixels, fit, interpolation=cv2.INTER_AREA)
            return encode_jpeg(pixels, quality)
    pixels = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    if pixels is None:
        return None
    return encode_jpeg(resize_to_fit(pixels, max_side), quality)


def _decode_reduced(buf: Any, size: tuple[int, int], fit: tuple[int, int]) -> Any | None:
    """A JPEG decoded at the smallest 1/8, 1/4 or 1/2 scale that still covers `fit`; None when
    no such scale exists or the image is not the `size` it was said to be."""
    import cv2

    width, height = size
    for denominator, flag in (
        (8, cv2.IMREAD_REDUCED_COLOR_8),
        (4, cv2.IMREAD_REDUCED_COLOR_4),
        (2, cv2.IMREAD_REDUCED_COLOR_2),
    ):
        shape = (-(-height // denominator), -(-width // denominator))  # libjpeg rounds up
        if shape[0] >= fit[1] and shape[1] >= fit[0]:
            pixels = cv2.imdecode(buf, flag)
            return pixels if pixels is not None and pixels.shape[:2] == shape else None
    return None


class ThumbnailWriter:
    """Writes a thumbnail of every image a run sends, in one worker thread.

    `record` only hands the bytes to the worker; `close` waits for what is pending. An image
    that does not decode is skipped and noted in `warnings`; `written` counts the files.
    """

    def __init__(self, bundle_dir: Path) -> None:
        self.dir = BundleLayout(bundle_dir).thumbnails
        self.written = 0
        self.warnings: list[str] = []
        self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="duplex-thumbnails"
        )

    def record(self, append: PlannedAppend) -> None:
        """Queue the thumbnails of one sent append (an `on_sent` hook; returns at once)."""
        if self._pool is None or append.frames is None or append.unit_index is None:
            return
        jobs = [
            (thumbnail_name(append.unit_index, k), bytes(image.data), (image.width, image.height))
            for k, image in enumerate(append.frames.images)
        ]
        self._pool.submit(self._write, jobs)

    def _write(self, jobs: list[tuple[str, bytes, tuple[int, int]]]) -> None:
        """In the worker: decode, shrink, encode and write each image."""
        for name, data, size in jobs:
            try:
                thumb = thumbnail_of(data, size=size)
                if thumb is None:
                    self.warnings.append(f"thumbnail {name} skipped: the frame does not decode")
                    continue
                self.dir.mkdir(parents=True, exist_ok=True)
                (self.dir / name).write_bytes(thumb)
            except Exception as exc:  # OpenCV or the disk: a lost thumbnail never ends a run
                self.warnings.append(f"thumbnail {name} not written: {exc}")
                continue
            self.written += 1

    def close(self) -> None:
        """Wait for every queued thumbnail, then stop the worker (blocking: not on the loop)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
