"""Speech recognition in a worker process, so one session's utterance never stalls the others.

pocketsphinx holds the GIL while it decodes (100–300 ms per utterance here), so a thread would
not help: the reference server's event loop would still stop for every session. One worker
process per server decodes instead; the loop only ships float samples over and gets text back.

The worker is `python -m duplex_client.server.engine.asr_worker` speaking a small binary
protocol on its stdin/stdout, not a `multiprocessing` child: a spawned child re-imports the
parent's main script, so a user script without an `if __name__ == "__main__"` guard that
starts a `ReferenceServer` would run a second time inside the worker.

The parent owns the worker's life: it runs in its own process group, so a Ctrl-C at the
terminal reaches only the server (which then closes the worker's stdin), and it ignores
SIGINT sent to it directly. It exits when its input ends.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import signal
import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import IO

import numpy as np

from duplex_client.server.engine.pcm import Samples

log = logging.getLogger("duplex_client.server")

_COUNT = struct.Struct("<I")
_REPLY = struct.Struct("<II")  # worker pid, number of texts

Job = Future[tuple[list[str], int]]


class WorkerDied(RuntimeError):
    """The recognition process exited (or could not be started)."""


def _read_exact(stream: IO[bytes], n: int) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise EOFError("the stream ended")
    return data


def _read_count(stream: IO[bytes]) -> int:
    return int(_COUNT.unpack(_read_exact(stream, _COUNT.size))[0])


def encode_request(segments: Sequence[Samples]) -> bytes:
    """One job: the number of segments, then each as a sample count and float32 samples."""
    parts = [_COUNT.pack(len(segments))]
    for seg in segments:
        data = np.ascontiguousarray(seg, dtype="<f4").tobytes()
        parts += [_COUNT.pack(len(data) // 4), data]
    return b"".join(parts)


def decode_request(stream: IO[bytes]) -> list[Samples]:
    """Read one job written by `encode_request`."""
    out: list[Samples] = []
    for _ in range(_read_count(stream)):
        n = _read_count(stream)
        out.append(np.frombuffer(_read_exact(stream, 4 * n), dtype="<f4").astype(np.float32))
    return out


def encode_reply(texts: Sequence[str], pid: int) -> bytes:
    """One answer: the worker's pid, the number of texts, then each as a length and UTF-8."""
    parts = [_REPLY.pack(pid, len(texts))]
    for text in texts:
        data = text.encode()
        parts += [_COUNT.pack(len(data)), data]
    return b"".join(parts)


def decode_reply(stream: IO[bytes]) -> tuple[list[str], int]:
    """Read one answer written by `encode_reply`."""
    pid, n = _REPLY.unpack(_read_exact(stream, _REPLY.size))
    texts = [_read_exact(stream, _read_count(stream)).decode() for _ in range(n)]
    return texts, int(pid)


class _Child:
    """A running worker: a writer thread feeds it jobs, a reader thread settles their futures."""

    def __init__(self) -> None:
        package_root = str(Path(__file__).resolve().parents[3])
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, path) if p)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            process_group=0,  # a terminal's Ctrl-C is for the server, which stops the worker
        )
        self.waiting: deque[Job] = deque()
        self.jobs: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self.dead = False
        self._lock = threading.Lock()
        threading.Thread(target=self._write, name="asr-worker-writer", daemon=True).start()
        threading.Thread(target=self._read, name="asr-worker-reader", daemon=True).start()

    def submit(self, segments: Sequence[Samples]) -> Job:
        job: Job = Future()
        with self._lock:
            if self.dead:
                raise WorkerDied("the recognition worker has exited")
            self.waiting.append(job)
        self.jobs.put(encode_request(segments))
        return job

    def _write(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            while (data := self.jobs.get()) is not None:
                stdin.write(data)
                stdin.flush()
            stdin.close()
        except OSError:
            pass  # the reader sees the worker go and fails what is waiting

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while True:
                result = decode_reply(stdout)
                with self._lock:
                    job = self.waiting.popleft()
                if not job.cancelled():
                    job.set_result(result)
        except (EOFError, OSError, IndexError):
            pass
        with self._lock:
            self.dead = True
            orphans, self.waiting = list(self.waiting), deque()
        for job in orphans:
            if not job.cancelled():
                job.set_exception(WorkerDied("the recognition worker exited"))

    def close(self, timeout: float) -> None:
        self.jobs.put(None)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class AsrWorker:
    """One recognition process, started on first use and replaced if it dies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._child: _Child | None = None

    def _running(self) -> _Child:
        with self._lock:
            if self._child is None or self._child.dead:
                self._child = _Child()
            return self._child

    def start(self) -> None:
        """Start the process now (it loads the model while the server waits for speech)."""
        self._running()

    def submit(self, segments: Sequence[Samples]) -> Job:
        """Transcribe segments off the event loop; the result is (texts, worker pid)."""
        try:
            return self._running().submit(segments)
        except (WorkerDied, OSError):
            self._restart()
            return self._running().submit(segments)

    def texts(self, job: Job, segments: Sequence[Samples]) -> list[str]:
        """A finished job's transcripts; if the worker failed, decode here instead (and log)."""
        try:
            return job.result()[0]
        except Exception as exc:  # a dead or broken worker must not cost the answer
            log.warning("speech recognition worker failed (%s); decoding in process", exc)
            self._restart()
            from duplex_client.server.engine.asr import shared_recognizer

            return [shared_recognizer().transcribe(s) for s in segments]

    def _restart(self) -> None:
        with self._lock:
            child, self._child = self._child, None
        if child is not None:
            child.close(timeout=0)  # it is gone or broken: do not keep the event loop waiting

    def close(self) -> None:
        """Stop the worker process (it finishes the jobs it was given)."""
        with self._lock:
            child, self._child = self._child, None
        if child is not None:
            child.close(timeout=30)


_shared: AsrWorker | None = None
_shared_lock = threading.Lock()


def shared_worker() -> AsrWorker:
    """The process-wide recognition worker, started on first use and stopped at exit."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = AsrWorker()
            _shared.start()
            atexit.register(_shared.close)
        return _shared


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """The worker's loop: load the recogniser, then answer jobs until the input ends."""
    from duplex_client.server.engine.asr import shared_recognizer

    recognizer = shared_recognizer()
    pid = os.getpid()
    while True:
        try:
            segments = decode_request(requests)
        except EOFError:
            return
        replies.write(encode_reply([recognizer.transcribe(s) for s in segments], pid))
        replies.flush()


def main() -> None:
    """Run as the worker process: SIGINT ignored, the protocol on the original stdout."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it by closing stdin
    # The protocol owns the original stdout; anything else printed goes to stderr.
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(sys.stdin.buffer, protocol_out)


if __name__ == "__main__":
    main()
