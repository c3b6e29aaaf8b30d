"""What an eval item costs the client per stream-second: a probe and a measurement.

A clip's cost is mostly decoding the frames sampled from it, and how many frames that takes
depends on where its keyframes fall: a sample is decoded from the last keyframe at or
before it, or onwards from the previous sample when that is nearer (`media.cursor`). So the
cost of a clip is predicted from its keyframe index (the packets read, none decoded) and two
measurements made once per kind of input (codec and size) on this machine: the CPU one
decoded frame costs, and the CPU its first seconds cost beyond decoding (resampling the
audio, scaling and encoding the JPEGs, and what the session does with each: base64 for the
wire, its hash, its thumbnail). Audio-only, image and recorded
items cost their audio planning and the session's own share. Blocking: call in a thread.
`Admission` holds what an eval starts its items by: these costs, the CPU budget
(`eval.budget`) and the machine's load.
"""

from __future__ import annotations

import asyncio
import bisect
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplex_client.eval.budget import CpuBudget
from duplex_client.eval.item import EvalItem
from duplex_client.eval.jobs import EvalProgress, EvalSettings
from duplex_client.run.options import RunOptions

#: Stream time planned to measure a kind's cost beyond its decoding.
CALIBRATE_MS = 2000
#: Frames decoded to measure what one costs.
CALIBRATE_FRAMES = 30
#: What a session costs the client per stream-second beside planning (sending, acks,
#: events, the listener, the timeline): measured 6-9 ms on our machines (benchmarks/README).
SESSION_MS_PER_S = 8.0


@dataclass(frozen=True, slots=True)
class ItemCost:
    """An item's predicted client CPU per stream-second, its stream length and its kind."""

    ms_per_s: float
    media_s: float
    kind: str


@dataclass(frozen=True, slots=True)
class _Calibration:
    frame_ms: float
    rest_ms_per_s: float


def decoded_frames(
    frame_pts: Sequence[float], key_pts: Sequence[float], samples: Sequence[float]
) -> list[int]:
    """Frames decoded for each sample time (ascending) of a stream whose frames show at
    `frame_pts` (ascending) with keyframes at `key_pts`: from the last keyframe at or before
    the frame shown, or on from the previous sample's frame when that is nearer."""
    out: list[int] = []
    at = -1  # the index of the last decoded frame
    for t in samples:
        shown = max(0, bisect.bisect_right(frame_pts, t) - 1)
        k = bisect.bisect_right(key_pts, frame_pts[shown]) - 1 if frame_pts else -1
        key = bisect.bisect_left(frame_pts, key_pts[k]) if k >= 0 else 0
        start = key if key > at else at + 1
        out.append(max(0, shown - start + 1))
        at = max(at, shown)
    return out


class CostModel:
    """Predicts items' costs; measures each kind of input once. Thread-safe."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        self._kinds: dict[tuple[Any, ...], _Calibration] = {}
        self._items: dict[tuple[Any, ...], ItemCost] = {}
        self._lock = threading.Lock()
        #: CPU seconds spent measuring (left out of the budget's refinement).
        self.spent_cpu_s = 0.0

    @staticmethod
    def key(item: EvalItem) -> tuple[Any, ...]:
        """What an item's cost depends on: its media."""
        return (item.input_video, item.input_audio, item.input_image, item.replay, item.error)

    def known(self, item: EvalItem) -> ItemCost | None:
        """The item's cost if it was predicted already."""
        return self._items.get(self.key(item))

    def estimate(self, item: EvalItem) -> ItemCost:
        """The item's cost (predicted once per media; blocking: call in a thread)."""
        key = self.key(item)
        with self._lock:
            if key not in self._items:
                try:
                    self._items[key] = self._estimate(item)
                except Exception:  # the item's own run says what is wrong with its media
                    self._items[key] = ItemCost(SESSION_MS_PER_S, 0.0, "unreadable")
            return self._items[key]

    def _estimate(self, item: EvalItem) -> ItemCost:
        if item.error is not None or item.replay is not None:
            return ItemCost(SESSION_MS_PER_S, 0.0, "replay" if item.replay else "refused")
        options = self._options(item)
        if item.input_video is None:
            calibration = self._kind(("audio", item.input_image is not None), options, ())
            media_s = _audio_seconds(options) + options.tail_silence_s
            return ItemCost(calibration.rest_ms_per_s + SESSION_MS_PER_S, media_s, "audio")
        scan = _scan(item.input_video)
        times = [
            k / options.video_fps for k in range(math.ceil(scan.duration_s * options.video_fps))
        ]
        counts = decoded_frames(scan.frame_pts, scan.key_pts, times)
        window = [n for t, n in zip(times, counts, strict=True) if t * 1000 < CALIBRATE_MS]
        kind = ("video", scan.codec, scan.width, scan.height, item.input_audio is not None)
        calibration = self._kind(kind, options, window, video=item.input_video)
        decode_ms_per_s = sum(counts) * calibration.frame_ms / max(scan.duration_s, 1e-3)
        cost = decode_ms_per_s + calibration.rest_ms_per_s + SESSION_MS_PER_S
        media_s = scan.duration_s + options.tail_silence_s
        return ItemCost(cost, media_s, f"{scan.height}p {scan.codec}")

    def _options(self, item: EvalItem) -> RunOptions:
        from duplex_client.eval.item_run import item_options

        return item_options(item, self.options, Path())

    def _kind(
        self,
        kind: tuple[Any, ...],
        options: RunOptions,
        window: Sequence[int],
        *,
        video: str | None = None,
    ) -> _Calibration:
        if kind not in self._kinds:
            started = time.thread_time()
            frame_ms = _frame_ms(video) if video is not None else 0.0
            plan_ms = _plan_ms(options)
            self.spent_cpu_s += time.thread_time() - started
            rest = max(0.0, plan_ms - sum(window) * frame_ms) / (CALIBRATE_MS / 1000)
            self._kinds[kind] = _Calibration(frame_ms, rest)
        return self._kinds[kind]


@dataclass(frozen=True, slots=True)
class _Scan:
    codec: str
    width: int
    height: int
    duration_s: float
    frame_pts: list[float]
    key_pts: list[float]


def _scan(path: str) -> _Scan:
    """The video's frame and keyframe times (s), read from its packets, none decoded."""
    from duplex_client.media.probe import open_input, origin_seconds

    with open_input(path) as container:
        stream = container.streams.video[0]
        tb = float(stream.time_base or 1 / 90000)
        origin = float(origin_seconds(container))
        frames: list[float] = []
        keys: list[float] = []
        for packet in container.demux(stream):
            if packet.pts is None:
                continue
            t = packet.pts * tb - origin
            frames.append(t)
            if packet.is_keyframe:
                keys.append(t)
        ctx = stream.codec_context
        codec, width, height = ctx.name, int(ctx.width), int(ctx.height)
    frames.sort()
    keys.sort()
    end = frames[-1] + (frames[-1] - frames[-2] if len(frames) > 1 else 0.0) if frames else 0.0
    return _Scan(codec, width, height, end, frames, keys)


def _frame_ms(path: str) -> float:
    """CPU ms one decoded frame of the video costs (the first frames, this thread)."""
    from duplex_client.media.cursor import DECODER_THREADS
    from duplex_client.media.probe import open_input

    with open_input(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = DECODER_THREADS
        n = 0
        started = time.thread_time()
        for packet in container.demux(stream):
            n += len(stream.decode(packet))
            if n >= CALIBRATE_FRAMES:
                break
        spent = time.thread_time() - started
    return spent * 1000 / max(n, 1)


def _plan_ms(options: RunOptions) -> float:
    """CPU ms the first `CALIBRATE_MS` of the options' input cost this thread: planning it,
    and what the session does with each image sent (encoding it for the wire, hashing it,
    its thumbnail)."""
    import base64
    import hashlib

    from duplex_client.bundle.thumbnails import make_thumbnail
    from duplex_client.framing import Framer, FramerConfig
    from duplex_client.run.sources.files import open_source

    source, closer = open_source(options)
    try:
        started = time.thread_time()
        for append in Framer(FramerConfig()).plan(source.audio, source.frames):
            for image in append.frames.images if append.frames is not None else ():
                data = bytes(image.data)
                base64.b64encode(data)
                hashlib.sha256(data).digest()
                if options.thumbnails:
                    make_thumbnail(data, size=(image.width, image.height))
            if append.media_end_ms >= CALIBRATE_MS:
                break
        return (time.thread_time() - started) * 1000
    finally:
        close = getattr(closer or source.frames, "close", None)  # audio holds nothing open
        if close is not None:
            close()


def _audio_seconds(options: RunOptions) -> float:
    """The length of an audio item's input (its audio file; an image alone: 0)."""
    if options.input_audio is None:
        return 0.0
    from duplex_client.media.probe import probe

    return probe(options.input_audio).duration_ms / 1000


class MachineLoad:
    """How many cores the machine's other processes keep busy (`/proc/stat`; else none)."""

    def __init__(self, every_s: float = 0.5) -> None:
        self.every_s = every_s
        #: CPU seconds of this process's helpers (its report process): its own load, not others'.
        self.helpers: Callable[[], float] = lambda: 0.0
        self._last = _machine_reading(self.helpers)

    def sample(self) -> float | None:
        """Cores busy outside this process since the last sample (None: too soon, or not
        Linux)."""
        if self._last is None or time.monotonic() - self._last[0] < self.every_s:
            return None
        now = _machine_reading(self.helpers)
        if now is None:
            return None
        (t0, busy0, own0), (t1, busy1, own1) = self._last, now
        self._last = now
        return max(0.0, (busy1 - busy0) - (own1 - own0)) / (t1 - t0)


def _machine_reading(helpers: Callable[[], float]) -> tuple[float, float, float] | None:
    """(monotonic s, CPU s the machine was busy, CPU s of this process and its helpers), or
    None."""
    import os

    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(v) for v in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    hz = os.sysconf("SC_CLK_TCK")
    busy = (user + nice + system + irq + softirq + steal) / hz
    return time.monotonic(), busy, time.process_time() + helpers()


@dataclass(slots=True)
class Admission:
    """The CPU budget an eval's items start within, what predicts their costs, and what
    tells it how busy the machine is."""

    budget: CpuBudget
    costs: CostModel
    load: MachineLoad | None = None

    async def settle(self, seconds: float = 0.5) -> None:
        """A first reading of the machine's other load before any item starts."""
        if self.load is not None:
            await asyncio.sleep(seconds)
            self.observe()

    def observe(self) -> None:
        """Take in the machine's other load (read at most every so often)."""
        others = None if self.load is None else self.load.sample()
        if others is not None:
            self.budget.observe_others(others)

    def allows(self, item: EvalItem) -> bool | None:
        """Whether the item may start now (None: not priced yet; False: held back, the
        budget notes the cap)."""
        cost = self.costs.known(item)
        if cost is None:
            return None
        self.observe()
        if self.budget.fits(cost.ms_per_s):
            return True
        self.budget.held(cost.ms_per_s)
        return False

    async def price(self, item: EvalItem) -> None:
        """Predict the item's cost off the loop (its media probed, its kind measured once)."""
        spent = self.costs.spent_cpu_s
        await asyncio.to_thread(self.costs.estimate, item)
        self.budget.exclude(self.costs.spent_cpu_s - spent)

    def start(self, key: str, item: EvalItem) -> None:
        """The item starts now (priced: `allows` said so)."""
        cost = self.costs.known(item) or ItemCost(0.0, 0.0, "unmeasured")
        self.budget.start(key, cost.ms_per_s, cost.media_s)

    def ended(self, item: EvalItem, *, on_time: bool) -> None:
        """An item's result is in: one that kept its timing raises a lost-timing ceiling."""
        cost = self.costs.known(item)
        if cost is not None and on_time:
            self.budget.kept(cost.ms_per_s)


def admission_for(
    settings: EvalSettings,
    endpoints: int,
    options: RunOptions,
    costs: CostModel | None,
    ray: str | bool | None,
    progress: EvalProgress,
) -> Admission | None:
    """The CPU budget an eval's items start within (None: one at a time, or on Ray's own
    workers, where a `cpu_budget` given gets a note)."""
    from duplex_client.eval.budget import DEFAULT_CPU_BUDGET, client_cores

    if ray is not None and ray is not False:
        if settings.cpu_budget is not None:
            progress.notes.append(
                "cpu_budget is not applied with ray: the items run on Ray's workers, not here"
            )
        return None
    bound = settings.concurrency * endpoints
    if bound <= 1:
        return None
    share = DEFAULT_CPU_BUDGET if settings.cpu_budget is None else float(settings.cpu_budget)
    budget = CpuBudget(client_cores(), share, bound=bound)
    return Admission(budget, costs or CostModel(options), MachineLoad())
