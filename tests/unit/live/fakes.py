"""Fake device modules for live mode, injected behind the real source classes.

`FakeSoundDevice` stands in for the `sounddevice` module: one input device that "hears" a
WAV file (or PCM) and one output device that records what it was given. `FakeCameras`
stands in for `cv2.VideoCapture`: a camera that shows a clip's frames (or coloured frames).
Both run on their own threads at `pace` times real time, like devices, or are stepped by
hand (`pace=None`: `feed(ms)` / `render(ms)`) for exact timing tests. Stream clocks are
virtual (frames done / rate), as PortAudio's stream time would be.
"""

from __future__ import annotations

import threading
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tests.support.media_files import colour_frame


class FakePortAudioError(Exception):
    """Raised like `sounddevice.PortAudioError`."""


@dataclass
class TimeInfo:
    inputBufferAdcTime: float = 0.0
    currentTime: float = 0.0
    outputBufferDacTime: float = 0.0


@dataclass
class Flags:
    input_overflow: bool = False
    output_underflow: bool = False

    def __bool__(self) -> bool:
        return self.input_overflow or self.output_underflow


class _Default:
    device: tuple[int, int] = (0, 1)


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """(int16 frames × channels, rate) of a PCM16 WAV."""
    with wave.open(str(path), "rb") as w:
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        return data.reshape(-1, w.getnchannels()), w.getframerate()


class _Stream:
    """What both fake streams share: a virtual clock, a pacing thread, start/stop/close."""

    ORIGIN = 1000.0

    def __init__(self, sd: FakeSoundDevice, samplerate: float, blocksize: int, callback: Any):
        self.sd = sd
        self.samplerate = int(samplerate)
        self.blocksize = int(blocksize) or self.samplerate // 50
        self.callback = callback
        self.frames_done = 0
        self.active = False
        self.closed = False
        self.latency = sd.output_latency_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def time(self) -> float:
        return self.ORIGIN + self.frames_done / self.samplerate

    def start(self) -> None:
        self.active = True
        if self.sd.pace is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        assert self.sd.pace is not None
        period = self.blocksize / self.samplerate / self.sd.pace
        t0 = time.monotonic()
        k = 0
        while not self._stop.is_set():
            k += 1
            wait = t0 + k * period - time.monotonic()
            if wait > 0 and self._stop.wait(wait):
                return
            self.step()

    def step(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        self.active = False

    def close(self) -> None:
        self.stop()
        self.closed = True


class FakeInputStream(_Stream):
    """Hears the device's PCM, then silence; with a hold, silence at its point until it lifts."""

    def __init__(self, sd: FakeSoundDevice, *, channels: int, dtype: str, **kw: Any) -> None:
        assert dtype == "int16"
        super().__init__(sd, kw["samplerate"], kw["blocksize"], kw["callback"])
        self.channels = channels
        self.device = kw.get("device")
        #: Where in the device's PCM the next block starts (behind the clock by the holds).
        self.position = 0
        self.held_frames = 0

    def _holding(self) -> bool:
        if self.sd.hold is None:
            return False
        at_ms, until = self.sd.hold
        return self.position >= at_ms * self.sd.input_rate // 1000 and not until()

    def step(self) -> None:
        with self._lock:
            n = self.blocksize
            src = self.sd.input_frames
            block = np.zeros((n, self.channels), dtype=np.int16)
            start = self.position
            if self._holding():
                self.held_frames += n
                start = len(src)  # silence, and the PCM waits
            else:
                self.position += n
            part = src[start : start + n]
            block[: len(part), : min(self.channels, src.shape[1])] = part[:, : self.channels]
            info = TimeInfo(
                inputBufferAdcTime=self.time, currentTime=self.time + n / self.samplerate
            )
            self.callback(block, n, info, Flags())
            self.frames_done += n

    def feed(self, ms: int) -> None:
        """Deliver `ms` of audio now (manual pacing)."""
        for _ in range(round(ms * self.samplerate / 1000 / self.blocksize)):
            self.step()


class FakeOutputStream(_Stream):
    """Asks its callback for blocks and keeps everything it was given in `played`."""

    def __init__(self, sd: FakeSoundDevice, *, channels: int, dtype: str, **kw: Any) -> None:
        assert channels == 1 and dtype == "int16"
        super().__init__(sd, kw["samplerate"], kw["blocksize"], kw["callback"])
        self.device = kw.get("device")
        self.played = bytearray()
        #: Blocks the callback filled with anything but silence.
        self.audible_blocks = 0

    def step(self) -> None:
        with self._lock:
            n = self.blocksize
            out = np.ones((n, 1), dtype=np.int16) * 7  # garbage the callback must overwrite
            info = TimeInfo(currentTime=self.time, outputBufferDacTime=self.time + self.latency)
            self.callback(out, n, info, Flags())
            self.played += out.astype("<i2").tobytes()
            self.audible_blocks += bool(out.any())
            self.frames_done += n

    def render(self, ms: int) -> None:
        """Play `ms` of output now (manual pacing)."""
        for _ in range(round(ms * self.samplerate / 1000 / self.blocksize)):
            self.step()


class FakeSoundDevice:
    """A `sounddevice`-like module object: device 0 is a microphone, device 1 a speaker."""

    PortAudioError = FakePortAudioError
    default = _Default()

    def __init__(
        self,
        *,
        wav: Path | None = None,
        pcm: bytes = b"",
        rate: int = 16000,
        channels: int = 1,
        accept_rates: tuple[int, ...] | None = None,
        pace: float | None = 1.0,
        output_latency_s: float = 0.0,
        devices: bool = True,
        speaker: bool = True,
        hold: tuple[int, Callable[[], bool]] | None = None,
    ) -> None:
        if wav is not None:
            self.input_frames, rate = read_wav(wav)
            channels = self.input_frames.shape[1]
        else:
            self.input_frames = np.frombuffer(pcm, dtype="<i2").reshape(-1, channels)
        self.input_rate = rate
        self.accept_rates = accept_rates or (rate,)
        self.pace = pace
        self.output_latency_s = output_latency_s
        self.devices = devices
        self.speaker = speaker  # False: a machine with a microphone and no output device
        #: (ms, until): the microphone hears silence from `ms` of its PCM until `until()`
        #: holds, then the rest (a talker who waits for something, e.g. `answer_audible`).
        self.hold = hold
        self.inputs: list[FakeInputStream] = []
        self.outputs: list[FakeOutputStream] = []

    def answer_audible(self) -> bool:
        """Whether the speaker has played anything but silence."""
        return any(out.audible_blocks for out in self.outputs)

    def query_devices(self, device: Any = None, kind: Any = None) -> list[dict[str, Any]]:
        if not self.devices:
            return []
        return [
            {"name": "Fake Mic", "index": 0, "hostapi": 0, "max_input_channels": 2,
             "max_output_channels": 0, "default_samplerate": float(self.input_rate)},
            {"name": "Fake Speaker", "index": 1, "hostapi": 0, "max_input_channels": 0,
             "max_output_channels": 2, "default_samplerate": 48000.0},
        ][: 2 if self.speaker else 1]  # fmt: skip

    def query_hostapis(self) -> list[dict[str, Any]]:
        return [{"name": "Fake API"}]

    def check_input_settings(self, *, device: Any, channels: int, dtype: str, samplerate: float):  # type: ignore[no-untyped-def]
        if int(samplerate) not in self.accept_rates:
            raise FakePortAudioError("Invalid sample rate")

    def InputStream(self, **kw: Any) -> FakeInputStream:
        stream = FakeInputStream(self, **kw)
        self.inputs.append(stream)
        return stream

    def OutputStream(self, **kw: Any) -> FakeOutputStream:
        kw.pop("latency", None)
        stream = FakeOutputStream(self, **kw)
        self.outputs.append(stream)
        return stream


class FakeVideoCapture:
    """A camera showing `frames` in a loop at `fps`; reads block like a device's."""

    def __init__(self, owner: FakeCameras, source: int | str) -> None:
        self.owner = owner
        self.source = source
        self.opened = owner.available
        self.reads = 0
        self._next = time.monotonic()

    def isOpened(self) -> bool:
        return self.opened

    def get(self, prop: int) -> float:
        return float(self.owner.fps) if prop == 5 else 0.0

    def read(self) -> tuple[bool, Any]:
        if not self.opened:
            return False, None
        if self.owner.pace is not None:
            self._next += 1 / self.owner.fps / self.owner.pace
            wait = self._next - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        frame = self.owner.frames[self.reads % len(self.owner.frames)]
        self.reads += 1
        return True, frame.copy()

    def release(self) -> None:
        self.opened = False


class FakeCameras:
    """A `cv2.VideoCapture`-like factory: every index opens the same fake camera."""

    def __init__(
        self,
        *,
        clip: Path | None = None,
        fps: float = 10.0,
        pace: float | None = 1.0,
        available: bool = True,
    ) -> None:
        self.fps = fps
        self.pace = pace
        self.available = available
        self.frames = [colour_frame(i) for i in range(10)] if clip is None else _clip_frames(clip)
        self.opened: list[FakeVideoCapture] = []

    def __call__(self, source: int | str) -> FakeVideoCapture:
        cap = FakeVideoCapture(self, source)
        self.opened.append(cap)
        return cap


def _clip_frames(path: Path) -> list[Any]:
    import cv2

    cap = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        frames.append(frame)
    cap.release()
    return frames
