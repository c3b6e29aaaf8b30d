"""A PCM16 mono WAV file that stays valid while it grows (header patched after every write)."""

from __future__ import annotations

import struct
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_HEADER_BYTES = 44


def _header(data_bytes: int, sample_rate_hz: int) -> bytes:
    byte_rate = sample_rate_hz * 2
    return (
        b"RIFF"
        + struct.pack("<I", 36 + data_bytes)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate_hz, byte_rate, 2, 16)
        + b"data"
        + struct.pack("<I", data_bytes)
    )


class GrowingWav:
    """Append PCM16 mono; after each `write` the file on disk is a complete, playable WAV."""

    def __init__(self, path: Path, sample_rate_hz: int) -> None:
        self.path = path
        self.sample_rate_hz = sample_rate_hz
        self.data_bytes = 0
        self._file: BinaryIO | None = path.open("wb")
        self._file.write(_header(0, sample_rate_hz))
        self._file.flush()

    @property
    def duration_ms(self) -> int:
        """Audio written so far."""
        return self.data_bytes * 1000 // (2 * self.sample_rate_hz)

    def write(self, pcm: bytes) -> None:
        """Append samples and patch the RIFF/data sizes."""
        if self._file is None:
            raise ValueError(f"{self.path}: WAV already closed")
        if not pcm:
            return
        self._file.seek(0, 2)
        self._file.write(pcm)
        self.data_bytes += len(pcm)
        self._file.seek(4)
        self._file.write(struct.pack("<I", 36 + self.data_bytes))
        self._file.seek(40)
        self._file.write(struct.pack("<I", self.data_bytes))
        self._file.flush()

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> GrowingWav:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_wav_pcm16(path: Path) -> tuple[bytes, int]:
    """(PCM bytes, sample rate) of a PCM16 mono WAV written by `GrowingWav` or `wave`."""
    import wave

    with wave.open(str(path), "rb") as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise ValueError(f"{path}: expected 16-bit mono PCM")
        return w.readframes(w.getnframes()), w.getframerate()


def write_wav(path: Path, samples: Any, sample_rate_hz: int) -> None:
    """Write int16 samples, shape (n,) mono or (n, channels), as a PCM16 WAV (atomically)."""
    import wave

    import numpy as np

    data = np.ascontiguousarray(samples, dtype="<i2")
    channels = 1 if data.ndim == 1 else int(data.shape[1])
    tmp = path.with_name(path.name + ".tmp")
    with wave.open(str(tmp), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(sample_rate_hz)
        w.writeframes(data.tobytes())
    tmp.replace(path)


def wav_rate(path: Path) -> int:
    """The sample rate of a WAV file, from its header."""
    import wave

    with wave.open(str(path), "rb") as w:
        return w.getframerate()


def read_wav_held(path: Path) -> tuple[npt.NDArray[np.int16], int, int]:
    """(samples, rate, frames the header declares) of a PCM16 WAV, tolerating a file cut short:
    the samples are the whole frames it holds, which may be fewer than declared."""
    import wave

    import numpy as np

    with wave.open(str(path), "rb") as w:
        if w.getsampwidth() != 2:
            raise ValueError(f"expected 16-bit PCM, got {8 * w.getsampwidth()}-bit")
        channels, rate, declared = w.getnchannels(), w.getframerate(), w.getnframes()
        data = w.readframes(declared)
    frame = 2 * channels
    held = np.frombuffer(data[: len(data) - len(data) % frame], dtype="<i2")
    out: npt.NDArray[np.int16] = held if channels == 1 else held.reshape(-1, channels)
    return out, rate, declared


def read_wav_int16(path: Path) -> npt.NDArray[np.int16]:
    """A PCM16 WAV as int16 samples: shape (n,) for mono, (n, channels) otherwise."""
    import wave

    import numpy as np

    with wave.open(str(path), "rb") as w:
        if w.getsampwidth() != 2:
            raise ValueError(f"{path}: expected 16-bit PCM")
        channels = w.getnchannels()
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    out: npt.NDArray[np.int16] = data if channels == 1 else data.reshape(-1, channels)
    return out
