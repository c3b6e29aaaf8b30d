"""Shared helpers for the pacing and sessions benchmarks: inputs, timing records, the server."""

from __future__ import annotations

import array
import asyncio
import importlib
import inspect
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from duplex_client.protocol.capabilities import Capabilities

#: Set to 1 (or pass `--quick`) for a smoke run of a few seconds; figures need the default run.
QUICK_ENV = "BENCH_QUICK"
SAMPLE_RATE_HZ = 16000
SERVER_START_TIMEOUT_S = 30.0


def quick_mode(argv: Sequence[str] | None = None) -> bool:
    """Whether a smoke run was asked for (`BENCH_QUICK=1` or `--quick`)."""
    args = sys.argv[1:] if argv is None else argv
    return os.environ.get(QUICK_ENV, "") not in ("", "0") or "--quick" in args


def machine() -> str:
    """The machine line printed with every table: cores, CPU model, Python, date."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    cores = f"{os.cpu_count()} cores"
    if usable is not None and usable != os.cpu_count():
        cores += f" of which this process may use {usable}"
    return f"{cores} ({cpu}), Python {platform.python_version()}, {date.today().isoformat()}"


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of `values`, linearly interpolated; 0 when empty."""
    if not values:
        return 0.0
    return float(np.percentile(np.asarray(values, dtype=np.float64), q * 100))


def speech_like_pcm(ms: int, seed: int = 0) -> bytes:
    """`ms` of 16 kHz mono int16 PCM: a gliding tone with noise (content does not matter)."""
    n = SAMPLE_RATE_HZ * ms // 1000
    t = np.arange(n) / SAMPLE_RATE_HZ
    rng = np.random.default_rng(seed)
    wave = 6000 * np.sin(2 * np.pi * (180 + 40 * np.sin(t)) * t) + rng.normal(0, 300, n)
    return wave.clip(-32768, 32767).astype(np.int16).tobytes()


def camera_image(width: int = 640, height: int = 480) -> npt.NDArray[np.uint8]:
    """A noisy BGR test picture (about 110 KB as JPEG q90 at 640x480, a busy camera frame)."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:height, 0:width]
    img = np.dstack([(x % 256), (y % 256), ((x + y) % 256)]).astype(np.int16)
    img = img + rng.integers(0, 40, img.shape)
    return img.clip(0, 255).astype(np.uint8)


def busy_wait(seconds: float) -> None:
    """Spin on the CPU for `seconds` (a simulated send cost that holds the event loop)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@dataclass(slots=True)
class Release:
    """One append as the stream released it: media span, unit closed, monotonic send times."""

    media_start_ms: int
    media_end_ms: int
    unit_index: int | None
    released_at: float
    sent_at: float = 0.0


@dataclass(slots=True)
class TimedTarget:
    """A `StreamTarget` around a session that records when each append is released.

    `send_cost_s` busy-waits after every send (simulated send cost); `naive_sleep` makes
    each append sleep its own duration after sending (the naive pacing baseline, driven
    by an `asap` stream).
    """

    inner: Any
    send_cost_s: float = 0.0
    naive_sleep: bool = False
    # Columns, not an object per append: hundreds of sessions' records would otherwise be
    # the largest thing the client's garbage collector walks, and the lateness they measure
    # would include the collections they cause. Units: -1 for none; sent at 0.0 until sent.
    _starts: array.array[int] = field(default_factory=lambda: array.array("q"))
    _ends: array.array[int] = field(default_factory=lambda: array.array("q"))
    _units: array.array[int] = field(default_factory=lambda: array.array("q"))
    _released: array.array[float] = field(default_factory=lambda: array.array("d"))
    _sent: array.array[float] = field(default_factory=lambda: array.array("d"))

    @property
    def releases(self) -> list[Release]:
        """Every append as it was released, in order."""
        return [
            Release(start, end, None if unit < 0 else unit, released, sent)
            for start, end, unit, released, sent in zip(
                self._starts, self._ends, self._units, self._released, self._sent, strict=True
            )
        ]

    @property
    def capabilities(self) -> Capabilities:
        """The wrapped session's capabilities."""
        caps: Capabilities = self.inner.capabilities
        return caps

    @property
    def audio_end_ms(self) -> int:
        """The wrapped session's audio end."""
        end: int = self.inner.audio_end_ms
        return end

    @property
    def input_pcm_format(self) -> Any:
        """The wrapped session's input format (what `stream` frames and sends)."""
        return self.inner.input_pcm_format

    async def append_input(
        self,
        pcm: bytes | None = None,
        *,
        video_frames: Sequence[bytes | str] = (),
        is_speech: bool | None = None,
        media_start_ms: int | None = None,
        media_end_ms: int | None = None,
        unit_index: int | None = None,
    ) -> str:
        """Record the release time, send, then pay the simulated cost (and the naive sleep)."""
        start = media_start_ms or 0
        end = media_end_ms if media_end_ms is not None else start
        row = len(self._sent)
        self._starts.append(start)
        self._ends.append(end)
        self._units.append(-1 if unit_index is None else unit_index)
        self._released.append(time.monotonic())
        self._sent.append(0.0)
        event_id: str = await self.inner.append_input(
            pcm,
            video_frames=video_frames,
            is_speech=is_speech,
            media_start_ms=media_start_ms,
            media_end_ms=media_end_ms,
            unit_index=unit_index,
        )
        self._sent[row] = time.monotonic()
        if self.send_cost_s:
            busy_wait(self.send_cost_s)
        if self.naive_sleep:
            await asyncio.sleep((end - start) / 1000)
        return event_id

    async def commit(self, *, final: bool = True, create_response: bool | None = None) -> str:
        """Commit on the wrapped session."""
        event_id: str = await self.inner.commit(final=final, create_response=create_response)
        return event_id

    def lateness_ms(self, t0: float) -> list[float]:
        """Each release's lateness against its deadline `t0 + media_end_ms` (negative: early)."""
        return [(at - t0) * 1000 - end for at, end in zip(self._released, self._ends, strict=True)]

    def send_ms(self) -> list[float]:
        """How long each `append_input` took (encoding, the socket write, flow control)."""
        pairs = zip(self._sent, self._released, strict=True)
        return [(sent - released) * 1000 for sent, released in pairs if sent]


def _serve_options(script: Path) -> list[str]:
    """`duplex-cli serve` options selecting the scripted engine (with its default script).

    `--engine scripted` when the CLI has it; otherwise an empty `--script`, which also
    selects the scripted engine whatever the default engine is.
    """
    try:
        serve_command = importlib.import_module("duplex_cli.serve").serve_command
    except ImportError:
        serve_command = None
    if serve_command is not None and "engine" in inspect.signature(serve_command).parameters:
        return ["--engine", "scripted"]
    script.write_text("{}", encoding="utf-8")
    return ["--script", str(script)]


@dataclass(slots=True)
class ServerProcess:
    """`duplex-cli serve` (reference backend, scripted engine) in its own process on loopback."""

    max_sessions: int = 1
    proc: subprocess.Popen[str] | None = None
    url: str = ""
    options: list[str] = field(default_factory=list)
    workdir: tempfile.TemporaryDirectory[str] | None = None
    #: A script for the scripted engine (None: its default script).
    script: dict[str, Any] | None = None
    #: The server profile (`--profile`).
    profile: str = "minicpmo"

    def start(self) -> str:
        """Start the server on a free loopback port and return its WebSocket URL."""
        cli = Path(sys.executable).parent / "duplex-cli"
        self.workdir = tempfile.TemporaryDirectory(prefix="bench-serve-")
        script = Path(self.workdir.name) / "script.json"
        self.options = _serve_options(script)
        if self.script is not None:
            script.write_text(json.dumps(self.script), encoding="utf-8")
            self.options = ["--engine", "scripted", "--script", str(script)]
        args = [str(cli), "serve", "--host", "127.0.0.1", "--port", "0"]
        args += ["--max-sessions", str(self.max_sessions), "--profile", self.profile]
        args += self.options
        env = {**os.environ, "NO_COLOR": "1"}
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            for word in line.split():
                if word.startswith("ws://"):
                    self.url = word
                    return self.url
        self.stop()
        raise RuntimeError("duplex-cli serve did not print its URL")

    @property
    def pid(self) -> int:
        """The server's process id."""
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        """Stop the server with SIGINT (clean shutdown), killing it if it hangs."""
        if self.proc is not None:
            stop_process(self.proc)
        self.proc = None
        if self.workdir is not None:
            self.workdir.cleanup()
            self.workdir = None

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stop_process(proc: subprocess.Popen[str]) -> None:
    """SIGINT (a clean shutdown), then kill if it is still running after 20 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def psutil() -> Any:
    """The `psutil` module (imported untyped: the project installs no stubs for it)."""
    return importlib.import_module("psutil")


def busy_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy (all cores, every process) since boot."""
    t = psutil().cpu_times()
    return float(t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0))


def steal_cpu_s() -> float:
    """CPU seconds the hypervisor has taken from this VM's cores since boot (0 on bare metal)."""
    return float(getattr(psutil().cpu_times(), "steal", 0.0))


def minor_faults(pid: int) -> int | None:
    """Minor page faults of process `pid` so far (Linux `/proc`; None elsewhere)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return None
    # Fields after the command name, which may hold spaces: state is first, minflt eighth.
    return int(stat.rsplit(")", 1)[1].split()[7])


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table (first column left-aligned, the rest right-aligned)."""
    align = ["---", *["---:"] * (len(headers) - 1)]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
