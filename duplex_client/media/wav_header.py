"""What a RIFF/WAVE file's header declares, read without decoding it.

libsndfile quietly shortens a WAV whose data chunk declares more than the file holds (a copy
or a recording cut short), so the length it reports cannot tell a truncated file. The
header's own claim can: `declared_frames` reads the `fmt ` block size and the `data` chunk
size. A length left open by a streaming writer (0, or a placeholder of 2 GiB or more:
0xFFFFFFFF, 0x7FFFF000, ...) declares nothing.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Final

#: Data lengths from here on are placeholders of writers that could not seek back.
_OPEN_FROM: Final = 0x7FFF_0000
_MAX_CHUNKS: Final = 64


@dataclass(frozen=True, slots=True)
class WavClaim:
    """What the header says: frames in the data chunk, and whether the file holds them all."""

    declared_frames: int
    #: Bytes of the data chunk present in the file.
    present_bytes: int
    block_align: int

    @property
    def present_frames(self) -> int:
        """Whole frames the file holds."""
        return self.present_bytes // self.block_align

    @property
    def partial_frame(self) -> bool:
        """Whether the data ends inside a frame (a damaged or cut file)."""
        return self.present_bytes % self.block_align != 0


def read_claim(path: str | os.PathLike[str]) -> WavClaim | None:
    """The data chunk's claim of a plain RIFF/WAVE file (None: another container, a header
    that cannot be walked, or a length left open)."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(12)
            if len(head) < 12 or head[:4] != b"RIFF" or head[8:] != b"WAVE":
                return None
            block_align = 0
            for _ in range(_MAX_CHUNKS):
                chunk = fh.read(8)
                if len(chunk) < 8:
                    return None
                cid, length = chunk[:4], struct.unpack("<I", chunk[4:])[0]
                if cid == b"fmt ":
                    body = fh.read(length + (length & 1))
                    if len(body) < 14:
                        return None
                    block_align = struct.unpack("<H", body[12:14])[0]
                elif cid == b"data":
                    if block_align <= 0 or length == 0 or length >= _OPEN_FROM:
                        return None
                    present = max(0, min(length, size - fh.tell()))
                    return WavClaim(length // block_align, present, block_align)
                else:
                    fh.seek(length + (length & 1), os.SEEK_CUR)
    except OSError:
        return None
    return None
