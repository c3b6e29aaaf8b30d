"""A file played into the session as if spoken into a microphone, at real-time pace."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from duplex_client.framing.pcm_format import DEFAULT_PCM, PcmFormat
from duplex_client.media.devices.capture import SILENCE_DBFS, AudioBlock, level_dbfs

#: What a file microphone does once the file is over.
AfterEnd = Literal["silence", "end"]


class FileMicrophone:
    """Delivers a file's audio in blocks at absolute deadlines, exactly like a device would.

    Block k (of `block_ms`) is handed out once its capture would have completed, at
    `start + (k + 1) * block_ms / speed` on `clock`, so lateness never accumulates. After
    the file, `after="silence"` keeps delivering silence (a quiet room) and `"end"` ends the
    source. `FileMicrophone.silence()` is the clock-only source used without a microphone.
    Blocks are in `output` (16 kHz int16 unless `set_output` names the session's format): a
    file is decoded straight to it by the media decoders (the package's one resampler);
    `pcm` bytes are taken to be in it already.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        pcm: bytes | None = None,
        after: AfterEnd = "silence",
        block_ms: int = 20,
        speed: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if block_ms <= 0 or speed <= 0:
            raise ValueError("block_ms and speed must be positive")
        if after not in ("silence", "end"):
            raise ValueError("after must be 'silence' or 'end'")
        self.path = None if path is None else os.fspath(path)
        self.after: AfterEnd = after
        self.block_ms = block_ms
        self.speed = speed
        self.clock = clock
        self.sleep = sleep
        self.level_dbfs = SILENCE_DBFS
        self._pcm = pcm
        self._info: dict[str, Any] = {"kind": "none", "path": None, "duration_ms": 0}
        self._t0: float | None = None
        self._k = 0
        self._closed = False
        #: What `read()` delivers (the session's input format).
        self.output = DEFAULT_PCM

    def set_output(self, fmt: PcmFormat) -> None:
        """Deliver blocks in `fmt` (the session's input encoding and rate); before `start()`."""
        if self._pcm is not None and self.path is not None:
            raise RuntimeError("set_output() must come before start()")
        self.output = fmt

    @classmethod
    def silence(cls, **options: Any) -> FileMicrophone:
        """A source of silence that only keeps the clock (no microphone)."""
        return cls(pcm=b"", **options)

    @property
    def kind(self) -> str:
        """`wav`/`audio_file` for a file, `none` for silence."""
        return str(self._info.get("kind", "none"))

    @property
    def block_samples(self) -> int:
        """Samples per block."""
        return self.output.sample_rate_hz * self.block_ms // 1000

    async def start(self) -> None:
        """Decode the file (a `MediaError` names it if it cannot be read)."""
        if self._pcm is None:
            from duplex_client.media import open_audio

            assert self.path is not None
            source = open_audio(self.path)
            source.set_output(self.output)
            self._pcm = b"".join(source.chunks())
            self._info = dict(source.info())
        elif self.path is None and self._pcm:
            self._info = {"kind": "pcm", "path": None}
        out = self.output
        self._info["duration_ms"] = len(self._pcm) * 1000 // (out.sample_rate_hz * out.sample_width)

    async def read(self) -> AudioBlock | None:
        """The next block at its deadline (None once closed, or after the file with `end`)."""
        if self._closed:
            return None
        assert self._pcm is not None, "start() first"
        n, width = self.block_samples, self.output.sample_width
        lo, hi = self._k * n * width, (self._k + 1) * n * width
        if lo >= len(self._pcm) and self.after == "end":
            return None
        if self._t0 is None:
            self._t0 = self.clock()
        due = self._t0 + (self._k + 1) * self.block_ms / 1000 / self.speed
        while (wait := due - self.clock()) > 0:
            await self.sleep(wait)
            if self._closed:
                return None
        pcm = self._pcm[lo:hi]
        pcm += bytes(n * width - len(pcm))  # zero bytes are silence in both encodings
        captured_at = self._t0 + self._k * self.block_ms / 1000 / self.speed
        block = AudioBlock(pcm, self._k * n, captured_at, fmt=self.output)
        self._k += 1
        self.level_dbfs = level_dbfs(pcm, self.output)
        return block

    async def close(self) -> None:
        """Stop delivering blocks."""
        self._closed = True

    def info(self) -> dict[str, Any]:
        """The file's `audio_source` facts (kind, path, duration, sha256)."""
        return dict(self._info)
