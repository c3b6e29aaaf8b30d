"""`ResponseHandle`: a response's pure state plus its audio as a stream and an awaitable end.

The state (decision, transcript, text, the audio kept, timings, acks) and the tracker that
fills it are the pure core's (`duplex_client.protocol.session.responses`); the connection
makes its responses as `ResponseHandle`s, and this shell adds what needs an event loop.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import AsyncIterator, Callable

from duplex_client.client.queues import DropOldestQueue
from duplex_client.protocol.session.responses import ResponseState


class ResponseHandle(ResponseState):
    """One model response (or a standalone listen): decision, transcript, text and audio.

    `audio()` streams the chunks as they arrive to one consumer at a time; reading what was
    kept (`audio_bytes()`, `audio_since(n)`) is not consuming and is always allowed.
    """

    def __init__(
        self,
        response_id: str | None,
        *,
        sample_rate_hz: int = 24000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(response_id, sample_rate_hz=sample_rate_hz, clock=clock)
        # The chunk queue and the end event are made when first needed: most responses of a
        # duplex session are listens nobody reads or awaits, one a unit, kept for the record,
        # and each of these would add five objects the garbage collector walks (issue 34).
        self._chunks: DropOldestQueue[bytes] | None = None
        self._audio_closed = False
        self._done: asyncio.Event | None = None
        self._reader: weakref.ref[_AudioStream] | None = None

    def audio(self) -> AsyncIterator[bytes]:
        """PCM16 chunks as they arrive, until the response ends (one consumer at a time).

        A second stream while the first is still open raises `RuntimeError`: each chunk goes
        to one reader, so two would each miss part of the audio.
        """
        current = self._reader() if self._reader is not None else None
        if current is not None and not current.ended:
            raise RuntimeError(
                f"response {self.response_id!r} audio already has a consumer: read it from "
                "that one stream, or use audio_bytes()/audio_since(n)"
            )
        stream = _AudioStream(self._chunk_queue())
        self._reader = weakref.ref(stream)
        return stream

    async def wait(self, timeout: float | None = None) -> ResponseHandle:
        """Wait until the response is done; returns self."""
        if self.done:
            return self
        if self._done is None:
            self._done = asyncio.Event()
        async with asyncio.timeout(timeout):  # not wait_for: it can swallow a cancel (3.11)
            await self._done.wait()
        return self

    def _chunk_queue(self) -> DropOldestQueue[bytes]:
        """The audio chunks' queue (closed already if the audio has ended)."""
        if self._chunks is None:
            self._chunks = DropOldestQueue()
            if self._audio_closed:
                self._chunks.close()
        return self._chunks

    # --- told by the pure state ---

    def _on_audio(self, pcm: bytes) -> None:
        self._chunk_queue().put(pcm)

    def _on_audio_end(self) -> None:
        self._audio_closed = True
        if self._chunks is not None:
            self._chunks.close()

    def _on_done(self) -> None:
        self._on_audio_end()
        if self._done is not None:
            self._done.set()


class _AudioStream:
    """One consumer's iteration over a handle's audio chunks (ended: exhausted or closed)."""

    def __init__(self, chunks: DropOldestQueue[bytes]) -> None:
        self._chunks = chunks
        self.ended = False

    def __aiter__(self) -> _AudioStream:
        return self

    async def __anext__(self) -> bytes:
        if self.ended:
            raise StopAsyncIteration
        try:
            return await self._chunks.get()
        except StopAsyncIteration:
            self.ended = True
            raise

    async def aclose(self) -> None:
        """Stop consuming: another `audio()` stream may start (chunks not taken stay queued)."""
        self.ended = True
