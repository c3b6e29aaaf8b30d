"""The sent payloads kept in a run bundle (`--keep-payloads`), so a replay needs nothing else.

`input.pcm` holds every append's PCM16 bytes back to back, in the order sent (a row's slice
starts at the sum of the earlier rows' `audio_bytes`); `sent_frames/<append>_<role>.jpg`
holds every image exactly as sent, at full size (`frames/` holds only the thumbnails). A
bundle written before thumbnails existed kept those images in `frames/`; it is still read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from duplex_client.bundle.layout import (
    INPUT_PCM_FILE,
    SENT_FRAMES_DIR,
    BundleLayout,
    is_thumbnail_name,
    sent_frame_name,
)
from duplex_client.framing.plan import PlannedAppend

__all__ = [
    "INPUT_PCM_FILE",
    "SENT_FRAMES_DIR",
    "KeptPayloads",
    "PayloadKeeper",
    "kept_frames_dir",
]


def kept_frames_dir(bundle_dir: Path) -> Path | None:
    """The folder a bundle keeps its sent images in (None: it kept none).

    `sent_frames/`, or in a bundle written before thumbnails, `frames/` holding no thumbnail.
    """
    layout = BundleLayout(bundle_dir)
    if layout.sent_frames.is_dir():
        return layout.sent_frames
    legacy = layout.thumbnails
    if legacy.is_dir() and not any(is_thumbnail_name(p.name) for p in legacy.iterdir()):
        return legacy
    return None


class PayloadKeeper:
    """Writes each sent append's payloads into the bundle as it goes out."""

    def __init__(self, bundle_dir: Path) -> None:
        self.dir = bundle_dir
        self._layout = BundleLayout(bundle_dir)
        self._layout.sent_frames.mkdir(parents=True, exist_ok=True)
        for old in self._layout.sent_frames.glob("*.jpg"):
            old.unlink()
        self._pcm: BinaryIO | None = self._layout.input_pcm.open("wb")
        self._index = 0

    def record(self, append: PlannedAppend) -> None:
        """Keep one sent append (an `on_sent` hook: called once per append, in order)."""
        if self._pcm is not None:
            self._pcm.write(append.pcm)
        if append.frames is not None:
            for image in append.frames.images:
                self._layout.sent_frame(self._index, image.role).write_bytes(image.data)
        self._index += 1

    def close(self) -> None:
        """Flush and close `input.pcm`."""
        if self._pcm is not None:
            with contextlib.suppress(OSError):
                self._pcm.close()
            self._pcm = None


class KeptPayloads:
    """Reads the payloads a bundle kept, for `RecordedInput.from_timeline`."""

    def __init__(self, bundle_dir: Path, rows: list[dict[str, Any]]) -> None:
        self.dir = bundle_dir
        path = BundleLayout(bundle_dir).input_pcm
        frames = kept_frames_dir(bundle_dir)
        if not path.exists() or frames is None:
            raise FileNotFoundError(f"{bundle_dir}: no kept payloads (run with --keep-payloads)")
        self.frames_dir = frames
        self._pcm = path.read_bytes()
        self._offsets: dict[int, int] = {}
        at = 0
        for row in rows:
            self._offsets[int(row["index"])] = at
            at += int(row.get("audio_bytes") or 0)

    def pcm(self, row: Mapping[str, Any]) -> bytes:
        """The PCM one append sent."""
        start = self._offsets[int(row["index"])]
        return self._pcm[start : start + int(row.get("audio_bytes") or 0)]

    def image(self, row: Mapping[str, Any], frame: Mapping[str, Any]) -> bytes:
        """The bytes of one image an append sent (empty if the file is gone)."""
        path = self.frames_dir / sent_frame_name(int(row["index"]), str(frame.get("role")))
        try:
            return path.read_bytes()
        except OSError:
            return b""
