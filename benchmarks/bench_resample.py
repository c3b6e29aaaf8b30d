"""Resampler quality, speed and latency: libswresample and libsoxr against linear interpolation.

Contenders, each a streaming interface (chunks in, what is ready out, `flush()` at the end):

- **linear (baseline)**: the hand-written linear interpolation live playback used before,
  re-created here since the package no longer has it;
- **PyAV default**: `av.AudioResampler` (libswresample) with FFmpeg's default filter, what the
  media, microphone, report and server paths used before;
- **PyAV tuned**: the same with `duplex_client.media.resample.SWR_OPTIONS`;
- **soxr HQ** / **soxr VHQ**: `soxr.ResampleStream` (libsoxr, python-soxr) at two presets;
- **package Resampler**: `duplex_client.media.resample.Resampler`, what the package uses.

Quality is measured on float32 samples (the filters' own figures, not hidden under the int16
noise floor at about −101 dB for these signals). 48 kHz → 16 kHz (the input path): a 10 kHz
tone must vanish (the residual's level against the output of a 1 kHz tone of the same level,
−6 dBFS); a log sweep 20 Hz → 20 kHz (10 s) must leave nothing while it is above 8 kHz (the
output's level then against its level while the sweep is at 100 Hz–7 kHz); the passband must
be flat (the largest gain deviation from 1 kHz of tones at 50 Hz–7 kHz), and the gain at
7.5 kHz says how far it reaches. 24 kHz → 48 kHz (the answer path): a 10 kHz tone's images
(everything in the output but 10 kHz, against 10 kHz) and the passband 50 Hz–10 kHz.
Latency: with 20 ms chunks, the most output a stream holds back (ms of output the input
covered but not yet given). Cut vs whole: the largest difference (int16 LSB) between a stream
cut at irregular points and one fed whole, at three rate pairs. Speed: 10 minutes of PCM16
(int16 in and out, conversions included) streamed in 200 ms chunks, input samples per second
(best of 3 rounds) and the ratio to the linear baseline in the same run.

Run: `python -m benchmarks.bench_resample` (`--quick` or `BENCH_QUICK=1`: 20 s of audio for
the speed columns, a smoke run).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from benchmarks._common import machine, quick_mode, table

Floats = npt.NDArray[np.float32]
FULL_SCALE = 32768.0
LEVEL = 0.5  # test signals at -6 dBFS


class Stream(Protocol):
    """A streaming mono resampler as the benchmark drives it (float32 or int16 in and out)."""

    def process(self, x: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Resample the next chunk."""
        ...

    def flush(self) -> npt.NDArray[Any]:
        """The end of the stream: what is still held back."""
        ...


#: `(in_rate, out_rate, pcm16)` → a stream; float32 in [-1, 1] unless `pcm16`.
Factory = Callable[[int, int, bool], Stream]


class Linear:
    """The linear interpolation `duplex_client.live.resample` had (baseline)."""

    def __init__(self, src: int, dst: int, pcm16: bool) -> None:
        self.src, self.dst, self.pcm16 = src, dst, pcm16
        self.step = src / dst
        self.pos = 0.0
        self.held = np.zeros(0, dtype=np.float32)
        self.taken = self.made = 0

    def _out(self, y: Floats) -> npt.NDArray[Any]:
        return np.clip(np.rint(y), -32768, 32767).astype(np.int16) if self.pcm16 else y

    def process(self, x: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Interpolate every output sample the held input reaches."""
        s = np.concatenate([self.held, x.astype(np.float32)])
        self.taken += len(x)
        last = len(s) - 1
        if last < 1 or self.pos > last:
            self.held = s
            return self._out(np.zeros(0, dtype=np.float32))
        count = int((last - self.pos) // self.step) + 1
        t = self.pos + np.arange(count) * self.step
        i = t.astype(np.int64)
        frac = (t - i).astype(np.float32)
        y = s[i] + (s[np.minimum(i + 1, last)] - s[i]) * frac
        following = self.pos + count * self.step
        keep = min(int(following), last)
        self.held = s[keep:]
        self.pos = following - keep
        self.made += count
        return self._out(y)

    def flush(self) -> npt.NDArray[Any]:
        """Repeat the last sample up to the exact length."""
        want = round(self.taken * self.dst / self.src) - self.made
        if want <= 0 or not len(self.held):
            return self._out(np.zeros(0, dtype=np.float32))
        self.made += want
        return self._out(np.full(want, self.held[-1], dtype=np.float32))


class PyAv:
    """`av.AudioResampler` (libswresample) on flt frames, FFmpeg's filter or `options`."""

    def __init__(self, src: int, dst: int, pcm16: bool, options: dict[str, str] | None) -> None:
        import av

        self.av, self.src, self.pcm16 = av, src, pcm16
        self.r = av.AudioResampler(format="flt", layout="mono", rate=dst, options=options)

    def _run(self, frame: Any) -> npt.NDArray[Any]:
        out = [f.to_ndarray().reshape(-1) for f in self.r.resample(frame)]
        y = np.concatenate(out) if out else np.zeros(0, dtype=np.float32)
        return np.clip(np.rint(y * FULL_SCALE), -32768, 32767).astype(np.int16) if self.pcm16 else y

    def process(self, x: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """One frame in, whatever the resampler gives out."""
        data = x.astype(np.float32) / np.float32(FULL_SCALE) if self.pcm16 else x
        frame = self.av.AudioFrame.from_ndarray(data[None, :], format="flt", layout="mono")
        frame.sample_rate = self.src
        return self._run(frame)

    def flush(self) -> npt.NDArray[Any]:
        """The resampler's tail."""
        return self._run(None)


class Soxr:
    """`soxr.ResampleStream` in float32 at a quality preset."""

    def __init__(self, src: int, dst: int, pcm16: bool, quality: str) -> None:
        import soxr

        self.pcm16 = pcm16
        self.s = soxr.ResampleStream(src, dst, 1, dtype="float32", quality=quality)

    def _out(self, y: Floats) -> npt.NDArray[Any]:
        return np.clip(np.rint(y * FULL_SCALE), -32768, 32767).astype(np.int16) if self.pcm16 else y

    def process(self, x: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Resample the next chunk."""
        data = x.astype(np.float32) / np.float32(FULL_SCALE) if self.pcm16 else x
        return self._out(self.s.resample_chunk(data))

    def flush(self) -> npt.NDArray[Any]:
        """The held-back tail."""
        return self._out(self.s.resample_chunk(np.zeros(0, np.float32), last=True))


def package(src: int, dst: int, pcm16: bool) -> Stream:
    """`duplex_client.media.resample.Resampler` (int16 for PCM16, float32 otherwise)."""
    from duplex_client.media.resample import Resampler

    return Resampler(src, dst) if pcm16 else Resampler(src, dst, dtype=np.float32)


def contenders() -> dict[str, Factory]:
    """Name → factory, the baseline first."""
    from duplex_client.media.resample import SWR_OPTIONS

    made: dict[str, Factory] = {
        "linear (baseline)": Linear,
        "PyAV default": lambda a, b, p: PyAv(a, b, p, None),
        "PyAV tuned": lambda a, b, p: PyAv(a, b, p, SWR_OPTIONS),
    }
    try:
        import soxr  # noqa: F401
    except ImportError:
        print("  (python-soxr is not installed: its rows are left out)")
    else:
        made["soxr HQ"] = lambda a, b, p: Soxr(a, b, p, "HQ")
        made["soxr VHQ"] = lambda a, b, p: Soxr(a, b, p, "VHQ")
    made["package Resampler"] = package
    return made


# --- signals and measures ---


def tone(hz: float, rate: int, seconds: float) -> Floats:
    """A sine at `LEVEL` of full scale."""
    t = np.arange(int(rate * seconds)) / rate
    return (np.sin(2 * np.pi * hz * t) * LEVEL).astype(np.float32)


def sweep(rate: int, seconds: float, f0: float = 20.0, f1: float = 20000.0) -> Floats:
    """A logarithmic sweep `f0` → `f1` at `LEVEL`."""
    t = np.arange(int(rate * seconds)) / rate
    k = np.log(f1 / f0)
    phase = 2 * np.pi * f0 * seconds / k * (np.exp(t * k / seconds) - 1)
    return (np.sin(phase) * LEVEL).astype(np.float32)


def run_whole(make: Factory, x: Floats, src: int, dst: int) -> npt.NDArray[np.float64]:
    """The float stream fed in 100 ms chunks, then flushed."""
    s = make(src, dst, False)
    step = src // 10
    parts = [s.process(x[i : i + step]) for i in range(0, len(x), step)]
    return np.concatenate([*parts, s.flush()]).astype(np.float64)


def middle(y: npt.NDArray[np.float64], rate: int) -> npt.NDArray[np.float64]:
    """The signal without its first and last 0.25 s (filter transients)."""
    cut = rate // 4
    return y[cut:-cut]


def db(ratio: float) -> float:
    """Power ratio in dB (floored at -300 dB)."""
    return float(10 * np.log10(max(ratio, 1e-30)))


def blackman_harris(n: int) -> npt.NDArray[np.float64]:
    """The 4-term Blackman-Harris window (sidelobes at -92 dB)."""
    k = np.arange(n) * 2 * np.pi / (n - 1)
    a = (0.35875, 0.48829, 0.14128, 0.01168)
    return np.asarray(a[0] - a[1] * np.cos(k) + a[2] * np.cos(2 * k) - a[3] * np.cos(3 * k))


def tone_power(y: npt.NDArray[np.float64], hz: float, rate: int) -> float:
    """Power of the component at `hz` (a windowed projection)."""
    w = blackman_harris(len(y))
    e = np.exp(-2j * np.pi * hz * np.arange(len(y)) / rate)
    amp = 2 * abs(np.sum(w * y * e)) / np.sum(w)
    return float(amp**2 / 2)


def off_tone_db(y: npt.NDArray[np.float64], hz: float, rate: int) -> float:
    """Everything of `y` but the component at `hz` (±40 Hz), against that component, in dB."""
    spec = np.abs(np.fft.rfft(y * blackman_harris(len(y)))) ** 2
    near = np.abs(np.fft.rfftfreq(len(y), 1 / rate) - hz) <= 40
    return db(float(spec[~near].sum()) / float(spec[near].sum()))


def gain_db(make: Factory, hz: float, src: int, dst: int) -> float:
    """A tone's gain through the resampler, in dB."""
    y = middle(run_whole(make, tone(hz, src, 2), src, dst), dst)
    return db(tone_power(y, hz, dst) / (LEVEL**2 / 2))


def flatness(make: Factory, src: int, dst: int, freqs: tuple[int, ...]) -> float:
    """The largest gain deviation (dB) of tones at `freqs` from the gain at 1 kHz."""
    ref = gain_db(make, 1000, src, dst)
    return max(abs(gain_db(make, hz, src, dst) - ref) for hz in freqs)


def quality(make: Factory) -> dict[str, float]:
    """The quality and latency figures of one contender (see the module docstring)."""
    out: dict[str, float] = {}
    ref = middle(run_whole(make, tone(1000, 48000, 2), 48000, 16000), 16000)
    high = middle(run_whole(make, tone(10000, 48000, 2), 48000, 16000), 16000)
    out["tone10k"] = db(float(np.mean(high**2)) / float(np.mean(ref**2)))
    seconds = 10.0
    swept = run_whole(make, sweep(48000, seconds), 48000, 16000)
    t = np.arange(len(swept)) / 16000
    f = 20 * np.exp(t * np.log(1000) / seconds)  # the sweep's frequency at each output sample
    in_band = swept[(f >= 100) & (f <= 7000)]
    above = swept[(f >= 8000) & (t <= seconds - 0.05)]
    out["sweep_alias"] = db(float(np.mean(above**2)) / float(np.mean(in_band**2)))
    down = (50, 100, 300, 2000, 3000, 5000, 6000, 7000)
    out["flat_down"] = flatness(make, 48000, 16000, down)
    out["g7500"] = gain_db(make, 7500, 48000, 16000) - gain_db(make, 1000, 48000, 16000)
    img = middle(run_whole(make, tone(10000, 24000, 2), 24000, 48000), 48000)
    out["image_up"] = off_tone_db(img, 10000, 48000)
    out["flat_up"] = flatness(make, 24000, 48000, (50, 100, 300, 2000, 5000, 8000, 10000))
    out["lag_down"] = max_lag_ms(make, 48000, 16000)
    out["lag_up"] = max_lag_ms(make, 24000, 48000)
    out["chunking"] = chunk_difference(make)
    return out


def max_lag_ms(make: Factory, src: int, dst: int) -> float:
    """The most output held back (ms) while 2 s are fed in 20 ms chunks."""
    s = make(src, dst, True)
    chunk = src // 50
    x = (tone(440, src, 0.02) * FULL_SCALE).astype(np.int16)
    given = 0
    worst = 0.0
    for k in range(1, 101):
        given += len(s.process(x))
        worst = max(worst, (k * chunk * dst / src - given) * 1000 / dst)
    return worst


def chunk_difference(make: Factory) -> float:
    """The largest |cut − whole| (int16 LSB) over three rate pairs; inf if lengths differ."""
    worst = 0.0
    for src, dst in ((24000, 48000), (48000, 16000), (22050, 16000)):
        x = (sweep(src, 1.0, 100, 7000) * 0.75 * FULL_SCALE).astype(np.int16)
        whole = make(src, dst, True)
        one = np.concatenate([whole.process(x), whole.flush()])
        cut = make(src, dst, True)
        points = [0, 1, 2, 3, 481, 482, 4801, 9000, 9001, len(x)]
        parts = [cut.process(x[a:b]) for a, b in itertools.pairwise(points)]
        many = np.concatenate([*parts, cut.flush()])
        if len(many) != len(one):
            return float("inf")
        worst = max(worst, float(np.abs(many.astype(np.int32) - one).max()))
    return worst


def speed(make: Factory, src: int, dst: int, seconds: float) -> float:
    """Input samples per second streaming `seconds` of PCM16 in 200 ms chunks (best of 3)."""
    rng = np.random.default_rng(0)
    chunk = src // 5
    x = (rng.standard_normal(chunk * 50) * 3000).astype(np.int16)  # 10 s, reused
    pieces = [x[i : i + chunk] for i in range(0, len(x), chunk)]
    n_chunks = int(seconds * 5)
    best = float("inf")
    for _ in range(3):
        s = make(src, dst, True)
        t0 = time.perf_counter()
        for p in itertools.islice(itertools.cycle(pieces), n_chunks):
            s.process(p)
        s.flush()
        best = min(best, time.perf_counter() - t0)
    return n_chunks * chunk / best


def main() -> None:
    """Print the quality, latency and speed table."""
    quick = quick_mode()
    seconds = 20.0 if quick else 600.0
    print(f"machine: {machine()}{' (quick run)' if quick else ''}", flush=True)
    rows: list[list[object]] = []
    base_down = base_up = 0.0
    for name, make in contenders().items():
        q = quality(make)
        down = speed(make, 48000, 16000, seconds)
        up = speed(make, 24000, 48000, seconds)
        if not rows:
            base_down, base_up = down, up
        rows.append(
            [
                name,
                f"{q['tone10k']:.1f}",
                f"{q['sweep_alias']:.1f}",
                f"{q['flat_down']:.2f}",
                f"{q['g7500']:.1f}",
                f"{q['image_up']:.1f}",
                f"{q['flat_up']:.2f}",
                f"{q['lag_down']:.1f} / {q['lag_up']:.1f}",
                f"{q['chunking']:.0f}",
                f"{down / 1e6:.1f} ({down / base_down:.2f}×)",
                f"{up / 1e6:.1f} ({up / base_up:.2f}×)",
            ]
        )
        print(f"  {name}: done", flush=True)
    headers = [
        "resampler",
        "10 kHz tone 48→16 k (dB re 1 kHz)",
        "sweep alias 48→16 k (dB)",
        "passband 48→16 k ±dB (50 Hz–7 kHz)",
        "gain at 7.5 kHz 48→16 k (dB)",
        "10 kHz images 24→48 k (dB)",
        "passband 24→48 k ±dB (50 Hz–10 kHz)",
        "held back, 20 ms chunks 48→16 / 24→48 (ms)",
        "cut vs whole (LSB)",
        f"48→16 k Msamples/s ({seconds:.0f} s, vs baseline)",
        f"24→48 k Msamples/s ({seconds:.0f} s, vs baseline)",
    ]
    print(table(headers, rows))


if __name__ == "__main__":
    main()
