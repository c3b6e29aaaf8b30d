"""Speech recognition in a worker process, so one session's utterance never stalls the others.

pocketsphinx holds the GIL while it decodes (100–300 ms per utterance here), so a thread would
not help: the reference server's event loop would still stop for every session. One worker
process per server decodes instead; the loop only ships float samples over and gets text back.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from duplex_client.server.engine.pcm import Samples

log = logging.getLogger("duplex_client.server")


def _load() -> None:
    """Worker initializer: load the recogniser before the first utterance arrives."""
    from duplex_client.server.engine.asr import shared_recognizer

    shared_recognizer()


def transcribe_all(segments: Sequence[Samples]) -> tuple[list[str], int]:
    """Worker job: the transcript of each segment, and the worker's process id."""
    from duplex_client.server.engine.asr import shared_recognizer

    recognizer = shared_recognizer()
    return [recognizer.transcribe(s) for s in segments], os.getpid()


class AsrWorker:
    """One recognition process (spawned, not forked: the server has onnxruntime threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                context = multiprocessing.get_context("spawn")
                self._pool = ProcessPoolExecutor(1, mp_context=context, initializer=_load)
            return self._pool

    def start(self) -> None:
        """Start the process now (it loads the model while the server waits for speech)."""
        self._executor().submit(os.getpid)

    def submit(self, segments: Sequence[Samples]) -> Future[tuple[list[str], int]]:
        """Transcribe segments off the event loop."""
        try:
            return self._executor().submit(transcribe_all, list(segments))
        except (BrokenProcessPool, RuntimeError):
            self._restart()
            return self._executor().submit(transcribe_all, list(segments))

    def texts(self, job: Future[tuple[list[str], int]], segments: Sequence[Samples]) -> list[str]:
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
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Stop the worker process."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


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
