"""`ResponseHandle`: a response's pure state plus its audio as a stream and an awaitable end.

The state (decision, transcript, text, the audio kept, timings, acks) and the tracker that
fills it are the pure core's (`duplex_client.protocol.session.responses`); the connection
makes its responses as `ResponseHandle`s, and this shell adds what needs an event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

from duplex_client.client.queues import DropOldestQueue
from duplex_client.protocol.session.responses import ResponseState


class ResponseHandle(ResponseState):
    """One model response (or a standalone listen): decision, transcript, text and audio."""

    def __init__(
        self,
        response_id: str | None,
        *,
        sample_rate_hz: int = 24000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(response_id, sample_rate_hz=sample_rate_hz, clock=clock)
        self._chunks: DropOldestQueue[bytes] = DropOldestQueue()
        self._done = asyncio.Event()

    async def audio(self) -> AsyncIterator[bytes]:
        """PCM16 chunks as they arrive, until the response ends (one consumer per handle)."""
        async for chunk in self._chunks:
            yield chunk

    async def wait(self, timeout: float | None = None) -> ResponseHandle:
        """Wait until the response is done; returns self."""
        async with asyncio.timeout(timeout):  # not wait_for: it can swallow a cancel (3.11)
            await self._done.wait()
        return self

    # --- told by the pure state ---

    def _on_audio(self, pcm: bytes) -> None:
        self._chunks.put(pcm)

    def _on_audio_end(self) -> None:
        self._chunks.close()

    def _on_done(self) -> None:
        self._chunks.close()
        self._done.set()

