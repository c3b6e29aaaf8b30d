"""A run's listening report built in a helper process, where its CPU holds up no other session.

`ListeningReport.build` (voice activity over the whole input, about 30 ms of CPU for 10 s of
audio, then resampling and two WAV files) ran in this process's worker threads. An eval that
runs many items at once ends them in bursts, and there the builds took the CPU, the
interpreter and the thread pool from the sessions still sending (issue 31: their sends came
late). Within `report_process()` (the eval's concurrent items) each build goes instead to one
of a few child Python processes at a lower scheduling priority (the one with the fewest
waiting; each builds one at a time): its arguments (the sent PCM, the heard audio, the facts
of the responses) go down a pipe as one pickle and the report comes back the same way. Same
code and inputs, so the same files and figures. When a child cannot start, dies or cannot
take an argument, the build runs in a thread here as before: nothing is lost. Outside
`report_process()` (one run) nothing changes.

Why not `concurrent.futures.ProcessPoolExecutor`: its children start by `spawn` (a `fork` of
this threaded, event-loop process is unsafe), and `spawn` imports the parent's `__main__` in
every child. A user's script or notebook without an `if __name__ == "__main__":` guard would
then fail to start its eval, or run it again in each child. These children are started as
`python -m duplex_client.run.report_process` and import nothing of the parent's.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import pickle
import struct
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, BinaryIO

from duplex_client.media.errors import MediaWarning, collect_media_warnings, warn_media
from duplex_client.run.listening_report import ListeningReport

__all__ = ["ReportPool", "ReportProcess", "build_report", "default_workers", "report_process"]

log = logging.getLogger(__name__)

#: How much less the child is scheduled than the sessions (`nice`): it takes what they leave.
CHILD_NICE = 5
#: How long to wait for the children to be warm (past it, builds queue in the pipes).
READY_TIMEOUT_S = 10.0
#: How long closing waits for the child to exit before killing it.
CLOSE_TIMEOUT_S = 5.0
_HEADER = struct.Struct("<Q")
_CURRENT: contextvars.ContextVar[ReportPool | None] = contextvars.ContextVar(
    "duplex_report_process", default=None
)


class ReportProcess:
    """One child process building reports in the order asked; `build` falls back to a thread."""

    def __init__(self) -> None:
        self._proc: asyncio.subprocess.Process | None = None
        self._waiting: list[asyncio.Future[Any]] = []
        self._reader: asyncio.Task[None] | None = None
        self.broken = False
        self._closing = False
        self._cpu_s = 0.0
        self._ready = asyncio.Event()
        #: Builds done by the child, and those that fell back to a thread.
        self.built = self.fell_back = 0

    async def start(self) -> None:
        """Start the child (it loads its modules and the VAD model while nothing waits)."""
        env = dict(os.environ)
        # the child imports this very package, wherever the parent found it
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        try:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                __name__,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                env=env,
            )
        except OSError as exc:
            self._fail(f"cannot start the report process ({exc})")
            return
        self._reader = asyncio.create_task(self._read(), name="duplex-report-process")

    async def ready(self, timeout_s: float) -> None:
        """Wait (at most `timeout_s`) until the child is warm, or gone."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), timeout_s)

    @property
    def warm(self) -> bool:
        """Whether the child said it is ready (its modules and the VAD model loaded)."""
        return self._ready.is_set() and not self.broken

    @property
    def waiting(self) -> int:
        """Builds asked of the child and not answered yet."""
        return len(self._waiting)

    def cpu_s(self) -> float:
        """The child's CPU seconds so far (`/proc`; the last reading once it is gone, 0 before
        it started or off Linux)."""
        if self._proc is not None:
            try:
                with open(f"/proc/{self._proc.pid}/stat", encoding="ascii") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
                self._cpu_s = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, ValueError, IndexError):
                pass
        return self._cpu_s

    async def build(self, **kwargs: Any) -> ListeningReport:
        """`ListeningReport.build(**kwargs)` in the child, else in a thread (same result)."""
        if not self.broken and self._proc is not None and self._proc.stdin is not None:
            try:
                payload = pickle.dumps(kwargs, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # an argument that cannot travel: built here instead
                log.warning("report built in a thread: %s", exc)
            else:
                reply = await self._ask(payload)
                if reply is not None:
                    self.built += 1
                    return _unpack(reply)
        self.fell_back += 1
        return await asyncio.to_thread(ListeningReport.build, **kwargs)

    async def _ask(self, payload: bytes) -> tuple[Any, ...] | None:
        """Send one request; its reply, or None once the child is gone."""
        assert self._proc is not None and self._proc.stdin is not None
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            self._proc.stdin.write(_HEADER.pack(len(payload)) + payload)
            await self._proc.stdin.drain()
        except (OSError, RuntimeError) as exc:
            self._fail(f"the report process took no request ({exc})")
        # shielded: the replies come in order, so a request stays counted until its reply
        reply: tuple[Any, ...] | None = await asyncio.shield(waiter)
        return reply

    async def _read(self) -> None:
        """Hand each reply to the oldest request (the child answers in order)."""
        assert self._proc is not None and self._proc.stdout is not None
        out = self._proc.stdout
        try:
            while True:
                size = _HEADER.unpack(await out.readexactly(_HEADER.size))[0]
                if size == 0:  # warm: its modules and the VAD model are loaded
                    self._ready.set()
                    continue
                reply = pickle.loads(await out.readexactly(size))
                if self._waiting:
                    waiter = self._waiting.pop(0)
                    if not waiter.done():
                        waiter.set_result(reply)
        except Exception as exc:  # it ended, or sent what cannot be read: threads from now on
            self._fail(None if self._closing else f"the report process ended ({exc!r})")

    def _fail(self, why: str | None) -> None:
        """Stop using the child (`why` logged, None when closed); whoever waits builds in a
        thread."""
        if not self.broken and why is not None:
            log.warning("%s: reports are built in threads from now on", why)
        self.broken = True
        self._ready.set()  # nothing to wait for
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            if not waiter.done():
                waiter.set_result(None)

    async def close(self) -> None:
        """Let the child finish what it was asked and exit (killed after `CLOSE_TIMEOUT_S`)."""
        proc = self._proc
        if proc is None:
            return
        self._closing = True
        self.cpu_s()  # the last reading while it is there to read
        if proc.stdin is not None:
            with contextlib.suppress(OSError, RuntimeError):
                proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), CLOSE_TIMEOUT_S)
        except BaseException as exc:  # hung, or the eval is cancelled: not left behind
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await asyncio.shield(proc.wait())
            if not isinstance(exc, TimeoutError):
                raise
        finally:
            if self._reader is not None:  # the replies still in the pipe are read first
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._reader), CLOSE_TIMEOUT_S)
                self._reader.cancel()
                await asyncio.gather(self._reader, return_exceptions=True)
            self._fail(None)


def _unpack(reply: tuple[Any, ...]) -> ListeningReport:
    """The child's reply as the build's own outcome: its report (media warnings said here, in
    the run's context, as a thread's would be), or its exception raised."""
    kind, value, warnings = reply
    for line in warnings:
        warn_media(MediaWarning(line))
    if kind == "error":
        raise value
    report: ListeningReport = value
    return report


class ReportPool:
    """`workers` report processes; each build goes to the one with the fewest waiting."""

    def __init__(self, workers: int) -> None:
        self.processes = [ReportProcess() for _ in range(max(1, workers))]

    async def start(self) -> None:
        """Start every child (each loads its modules and the VAD model: about 0.6 s of CPU)."""
        for process in self.processes:
            await process.start()

    async def ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Wait (at most `timeout_s`) until every child is warm: their start must not compete
        with the first sessions' own (past it, builds queue in the pipes)."""
        await asyncio.gather(*(p.ready(timeout_s) for p in self.processes))

    def cpu_s(self) -> float:
        """The children's CPU seconds so far."""
        return sum(p.cpu_s() for p in self.processes)

    @property
    def built(self) -> int:
        """Builds done by the children."""
        return sum(p.built for p in self.processes)

    @property
    def fell_back(self) -> int:
        """Builds that fell back to a thread."""
        return sum(p.fell_back for p in self.processes)

    async def build(self, **kwargs: Any) -> ListeningReport:
        """`ListeningReport.build(**kwargs)` in the least busy child (else in a thread)."""
        usable = [p for p in self.processes if not p.broken] or self.processes
        return await min(usable, key=lambda p: p.waiting).build(**kwargs)

    async def close(self) -> None:
        """Close every child."""
        for process in self.processes:
            await process.close()


def default_workers() -> int:
    """Half the cores this process may use, at least two (one child queued a burst of ends for
    seconds on a loaded 2-core machine)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return max(2, cores // 2)


@contextlib.asynccontextmanager
async def report_process(
    workers: int | None = None, *, warm: bool = True
) -> AsyncIterator[ReportPool]:
    """Within this block (and the tasks started in it) reports are built in `workers` child
    processes (default: `default_workers()`); `warm`: the block starts once they are ready
    (else await `ReportPool.ready()` before the sessions start)."""
    pool = ReportPool(default_workers() if workers is None else workers)
    await pool.start()
    if warm:
        await pool.ready()
    token = _CURRENT.set(pool)
    try:
        yield pool
    finally:
        _CURRENT.reset(token)
        await pool.close()


async def build_report(**kwargs: Any) -> ListeningReport:
    """`ListeningReport.build(**kwargs)` off the event loop: in the report process when one is
    open (`report_process`), else in a worker thread."""
    process = _CURRENT.get()
    if process is None:
        return await asyncio.to_thread(ListeningReport.build, **kwargs)
    return await process.build(**kwargs)


# --- the child ----------------------------------------------------------------------------


def _answer(kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Build one report: ("ok", report, warnings) or ("error", exception, warnings)."""
    said: list[str] = []
    try:
        with collect_media_warnings(lambda w: said.append(str(w))):
            return ("ok", ListeningReport.build(**kwargs), said)
    except Exception as exc:
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:
            exc = RuntimeError(f"{type(exc).__name__}: {exc}")
        return ("error", exc, said)


def _serve(inp: BinaryIO, out: BinaryIO) -> None:
    """Answer requests from `inp` on `out` until `inp` ends."""
    while True:
        head = inp.read(_HEADER.size)
        if len(head) < _HEADER.size:
            return
        kwargs = pickle.loads(inp.read(_HEADER.unpack(head)[0]))
        reply = pickle.dumps(_answer(kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        out.write(_HEADER.pack(len(reply)) + reply)
        out.flush()


def _warm() -> None:
    """Load what a build needs before the first is asked (the VAD model if it is there)."""
    from duplex_client.media.resample import resample  # noqa: F401
    from duplex_client.media.speech import VadUnavailable
    from duplex_client.media.vad import shared_sequence_model

    with contextlib.suppress(VadUnavailable):
        shared_sequence_model()


def main() -> None:
    """The child: requests on stdin, replies on the stdout it was given (anything else a
    library prints goes to stderr)."""
    with contextlib.suppress(OSError, AttributeError):  # no `nice` off Unix
        os.nice(CHILD_NICE)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    _warm()
    out.write(_HEADER.pack(0))  # warm: an empty frame says so
    out.flush()
    _serve(sys.stdin.buffer, out)


if __name__ == "__main__":
    main()
