"""The microphone: a sounddevice input stream, resampled to 16 kHz mono, on the audio clock."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from duplex_client.framing.sources import BYTES_PER_SAMPLE, INPUT_SAMPLE_RATE_HZ
from duplex_client.live.devices import DeviceError, load_sounddevice, resolve_audio_device
from duplex_client.live.sources import SILENCE_DBFS, AudioBlock, level_dbfs

#: Blocks kept for a slow consumer before the oldest are dropped (their time becomes a gap).
DEFAULT_QUEUE_S = 5.0


class Resampler:
    """Streaming conversion of int16 blocks (any rate, any channels) to 16 kHz mono int16."""

    def __init__(self, rate: int, channels: int) -> None:
        self.rate = rate
        self.channels = channels
        self._av: Any = None
        if rate != INPUT_SAMPLE_RATE_HZ:
            import av

            self._av = av.AudioResampler(format="s16", layout="mono", rate=INPUT_SAMPLE_RATE_HZ)

    def convert(self, block: Any) -> bytes:
        """One captured block (frames × channels int16 array) as 16 kHz mono bytes."""
        import numpy as np

        data = np.asarray(block, dtype=np.int16)
        if data.ndim == 2 and data.shape[1] > 1:
            data = data.astype(np.int32).mean(axis=1).round().astype(np.int16)
        mono = np.ascontiguousarray(data.reshape(-1))
        if self._av is None:
            return mono.astype("<i2").tobytes()
        import av

        frame = av.AudioFrame.from_ndarray(mono.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = self.rate
        return b"".join(
            bytes(out.planes[0])[: out.samples * BYTES_PER_SAMPLE]
            for out in self._av.resample(frame)
        )


class Microphone:
    """An input device through sounddevice (injectable as `sd`, e.g. a fake in tests).

    The stream is opened at 16 kHz mono when the device takes it, else at the device's own
    rate and resampled. Blocks are placed on the audio clock by counting samples, never by
    wall-clock guesses; `captured_at` comes from PortAudio's ADC time when it reports one.
    """

    kind = "microphone"

    def __init__(
        self,
        device: int | str | None = None,
        *,
        sd: Any | None = None,
        block_ms: int = 20,
        queue_s: float = DEFAULT_QUEUE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if block_ms <= 0:
            raise ValueError("block_ms must be positive")
        self.device = device
        self.block_ms = block_ms
        self.clock = clock
        self.device_name: str | None = None
        self.rate = INPUT_SAMPLE_RATE_HZ
        self.channels = 1
        self.overflows = 0
        self.dropped_samples = 0
        self.level_dbfs = SILENCE_DBFS
        self._sd = sd
        self._queue_s = queue_s
        self._stream: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: deque[tuple[Any, float, bool]] = deque()
        self._max_pending = 1
        self._ready = asyncio.Event()
        self._samples = 0
        self._gap = 0.0
        self._resampler: Resampler | None = None
        self._closed = False

    async def start(self) -> None:
        """Open and start the input stream (`DeviceError` if PortAudio or the device fails)."""
        sd = self._sd if self._sd is not None else load_sounddevice()
        self._sd = sd
        dev = resolve_audio_device(sd, self.device, "input")
        self.device_name = dev.name
        self.rate, self.channels = self._settings(sd, dev.index, dev.default_samplerate)
        self._resampler = Resampler(self.rate, self.channels)
        blocksize = max(1, self.rate * self.block_ms // 1000)
        self._max_pending = max(4, round(self._queue_s * 1000 / self.block_ms))
        self._loop = asyncio.get_running_loop()
        try:
            self._stream = sd.InputStream(
                samplerate=self.rate,
                blocksize=blocksize,
                device=dev.index,
                channels=self.channels,
                dtype="int16",
                callback=self._callback,
            )
            self._stream.start()
        except Exception as exc:
            raise DeviceError(f"cannot open the microphone {dev.name!r}: {exc}") from None

    def _settings(self, sd: Any, index: int, default_rate: float) -> tuple[int, int]:
        """16 kHz mono if the device takes it, else its default rate (mono, or stereo)."""
        check = getattr(sd, "check_input_settings", None)
        candidates = [(INPUT_SAMPLE_RATE_HZ, 1)]
        if default_rate > 0:
            candidates += [(round(default_rate), 1), (round(default_rate), 2)]
        for rate, channels in candidates:
            if check is None:
                return rate, channels
            try:
                check(device=index, channels=channels, dtype="int16", samplerate=rate)
            except Exception:
                continue
            return rate, channels
        raise DeviceError(f"the microphone (device {index}) accepts no usable format")

    def _callback(self, indata: Any, frames: int, time_info: Any, status: Any) -> None:
        """PortAudio thread: copy the block and hand it to the event loop."""
        now = self.clock()
        adc = float(getattr(time_info, "inputBufferAdcTime", 0.0) or 0.0)
        current = float(getattr(time_info, "currentTime", 0.0) or 0.0)
        if adc > 0 and current >= adc:
            captured_at = now - (current - adc)
        else:
            captured_at = now - frames / self.rate
        overflow = bool(getattr(status, "input_overflow", False))
        loop = self._loop
        if loop is None or self._closed:
            return
        try:
            loop.call_soon_threadsafe(self._put, indata.copy(), captured_at, overflow)
        except RuntimeError:  # the loop is closing
            return

    def _put(self, data: Any, captured_at: float, overflow: bool) -> None:
        if len(self._pending) >= self._max_pending:
            lost, _, _ = self._pending.popleft()
            self._gap += len(lost) * INPUT_SAMPLE_RATE_HZ / self.rate
        self._pending.append((data, captured_at, overflow))
        self._ready.set()

    async def read(self) -> AudioBlock | None:
        """The next captured block (None once closed)."""
        while not self._pending:
            if self._closed:
                return None
            self._ready.clear()
            await self._ready.wait()
        data, captured_at, overflow = self._pending.popleft()
        assert self._resampler is not None
        if overflow:
            self.overflows += 1
        gap = int(self._gap)
        if gap:
            self._gap -= gap
            self.dropped_samples += gap
            self._samples += gap
        pcm = self._resampler.convert(data)
        block = AudioBlock(pcm, self._samples, captured_at, overflow)
        self._samples += block.samples
        self.level_dbfs = level_dbfs(pcm)
        return block

    async def close(self) -> None:
        """Stop and close the stream (idempotent)."""
        self._closed = True
        self._ready.set()
        stream, self._stream = self._stream, None
        if stream is not None:
            for step in (stream.stop, stream.close):
                try:
                    step()
                except Exception:
                    continue

    def info(self) -> dict[str, Any]:
        """`audio_source` facts: a device has no path and no hash."""
        return {
            "kind": "microphone",
            "path": None,
            "duration_ms": self._samples * 1000 // INPUT_SAMPLE_RATE_HZ,
            "sha256": None,
        }
