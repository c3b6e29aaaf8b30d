"""The input API of the session client (appends, commits, requests, playback acks, §3–§5)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from duplex_client.client.config import SessionConfig
from duplex_client.client.responses import ResponseTracker
from duplex_client.client.waiters import Outcomes
from duplex_client.protocol import client_events as ce
from duplex_client.protocol import server_events as se
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.codec import b64encode, encode_image
from duplex_client.protocol.errors import DuplexSessionClosedError

AckPolicy = Literal["received", "manual"]

#: Bytes per sample of the input encodings the client can send.
BYTES_PER_SAMPLE = {"pcm16": 2, "pcm_s16le": 2, "s16le": 2, "pcm_f32le": 4}


class PcmArray(Protocol):
    """The part of a numpy array `append_input` uses (numpy is not imported here)."""

    @property
    def dtype(self) -> Any:
        """Element type."""
        ...

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        ...

    def tobytes(self) -> bytes:
        """Raw bytes."""
        ...


PcmInput = bytes | bytearray | memoryview | PcmArray | None


def pcm_bytes(pcm: PcmInput, width: int) -> bytes:
    """PCM as bytes, checked to be whole samples (arrays must be 1-D of the session's type)."""
    if pcm is None:
        return b""
    if isinstance(pcm, bytes | bytearray | memoryview):
        data = bytes(pcm)
    else:
        expected = "int16" if width == 2 else "float32"
        if str(pcm.dtype) != expected or pcm.ndim != 1:
            raise ValueError(f"pcm array must be 1-D {expected}, got {pcm.ndim}-D {pcm.dtype}")
        data = pcm.tobytes()
    if len(data) % width:
        raise ValueError(f"pcm length {len(data)} is not a multiple of the sample width {width}")
    return data


def build_append(
    data: bytes,
    video_frames: Sequence[bytes | str],
    *,
    caps: Capabilities,
    samples_before: int,
    width: int,
    rate: int,
    audio_format: str,
    is_speech: bool | None,
    media_start_ms: int | None,
    media_end_ms: int | None,
    unit_index: int | None,
) -> ce.InputAudioBufferAppend:
    """The append event for checked PCM and frames; raises `ValueError` for an illegal one."""
    frames = tuple(encode_image(f) for f in video_frames)
    if not data and not frames:
        raise ValueError("an append needs audio, video frames or both")
    if len(frames) > caps.max_frames_per_append:
        raise ValueError(
            f"{len(frames)} frames exceed max_frames_per_append={caps.max_frames_per_append}"
        )
    if any(not f for f in frames):
        raise ValueError("video frames must be non-empty")
    samples = len(data) // width
    total = samples_before + samples
    return ce.InputAudioBufferAppend(
        audio=b64encode(data) if data else "",
        duration_ms=round(samples * 1000 / rate),
        audio_end_ms=round(total * 1000 / rate),
        video_frames=frames,
        format=audio_format if data else None,
        sample_rate_hz=rate if data else None,
        is_speech=is_speech if data or is_speech is not None else False,
        media_start_ms=media_start_ms,
        media_end_ms=media_end_ms,
        unit_index=unit_index,
    )


class InputMethods:
    """The sending half of the client API; `DuplexClientBase` provides the state and `_send`."""

    capabilities: Capabilities
    config: SessionConfig
    tracker: ResponseTracker
    ack_policy: AckPolicy
    session: dict[str, Any]
    _terminal: bool
    _finished: asyncio.Event
    _playback_ack_task: asyncio.Task[None] | None
    _playback_acks_due: bool
    _samples: int
    _width: int
    _rate: int
    _outcomes: Outcomes

    async def _send(self, event: ce.ClientEvent) -> str:
        raise NotImplementedError

    async def _send_dict(self, payload: dict[str, Any]) -> None:
        raise NotImplementedError

    async def append_input(
        self,
        pcm: PcmInput = None,
        *,
        video_frames: Sequence[bytes | str] = (),
        is_speech: bool | None = None,
        media_start_ms: int | None = None,
        media_end_ms: int | None = None,
        unit_index: int | None = None,
    ) -> str:
        """Append PCM and/or frames; empty PCM with frames is a VISION unit. Returns the id.

        Concurrent calls go out in call order, each `audio_end_ms` counting every call before.
        """
        data = pcm_bytes(pcm, self._width)
        event = build_append(
            data,
            video_frames,
            caps=self.capabilities,
            samples_before=self._samples,
            width=self._width,
            rate=self._rate,
            audio_format=self.config.input_audio_format,
            is_speech=is_speech,
            media_start_ms=media_start_ms,
            media_end_ms=media_end_ms,
            unit_index=unit_index,
        )
        # Counted before the first await, so the next call starts where this one ends; the
        # link queues every event in call order (outbox entry, FIFO lock) before it awaits
        # a socket. A lock here would let a later commit overtake a waiting append.
        before = self._samples
        self._samples += len(data) // self._width
        try:
            await self._send(event)
        except DuplexSessionClosedError:  # never sent: uncount it unless a later call built on it
            if self._samples == before + len(data) // self._width:
                self._samples = before
            raise
        return event.event_id

    async def commit(self, *, final: bool = True, create_response: bool | None = None) -> str:
        """Seal the turn (`final=False`: flush whole units only). Acks finished responses first."""
        await self._ack_finished()
        event = ce.InputAudioBufferCommit(final=final, response_create=create_response)
        if final:
            self.tracker.commit_sent(event.event_id)
        return await self._send(event)

    async def create_response(self, **options: Any) -> str:
        """Ask for a response; options go into `response` (modalities, instructions, ...)."""
        return await self._send(ce.ResponseCreate(response=dict(options)))

    async def cancel_response(self, response_id: str | None = None) -> str:
        """Cancel a response (default: the active one); its audio is fenced at once."""
        target = response_id or (self.tracker.active.response_id if self.tracker.active else None)
        self.tracker.fence(target)
        return await self._send(ce.ResponseCancel(response_id=response_id))

    async def clear_output_audio(self, response_id: str | None = None) -> str:
        """Ask the server to stop sending a response's audio; it is fenced at once."""
        target = response_id or (self.tracker.active.response_id if self.tracker.active else None)
        self.tracker.fence(target)
        return await self._send(ce.OutputAudioBufferClear(response_id=response_id))

    async def clear_input(self) -> str:
        """Drop the server's buffered input (`input_audio_buffer.clear`)."""
        return await self._send(ce.InputAudioBufferClear())

    async def ack_playback(
        self,
        played_ms: int,
        *,
        response_id: str,
        committed_ms: int | None = None,
        truncate: bool = False,
    ) -> str | None:
        """Report audio actually played; None (nothing sent) if the server takes no acks."""
        if not self.capabilities.supports_playback_ack:
            return None
        handle = self.tracker.handles.get(response_id)
        played = int(played_ms)
        if handle is not None:
            played = max(played, handle.acked_ms or 0)
            handle.played_ms = played
            handle.acked_ms = played
        event = ce.PlaybackAck(
            response_id=response_id, played_ms=played, committed_ms=committed_ms, truncate=truncate
        )
        return await self._send(event)

    async def _ack_finished(self) -> None:
        """Ack-before-commit: each finished response is acked up to what was played (§5).

        A response acked part-way (while playing) is acked again when more was played since.
        Under `ack_only` a response a later commit has sealed is skipped: the server would
        refuse its ack (it finished before that commit, and its done arrived after we sent ours).
        """
        if not self.capabilities.supports_playback_ack:
            return
        expired = self.acks_expire()
        for handle in self.tracker.finished:
            if handle.response_id is None or (expired and handle.sealed):
                continue
            played = handle.audio_ms if self.ack_policy == "received" else handle.played_ms
            if handle.acked_ms is not None and played <= handle.acked_ms:
                continue
            await self.ack_playback(played, response_id=handle.response_id, truncate=handle.fenced)

    def _schedule_playback_acks(self) -> None:
        """Ack a finished response at once when what was received counts as played.

        Acking only before our own commits is too late when the server commits (server
        VAD): under `ack_only` an ack for a response finished before a later commit is
        refused, and the answer would never enter history (protocol.md §5).
        """
        self._playback_acks_due = True
        if self._playback_ack_task is None or self._playback_ack_task.done():
            self._playback_ack_task = asyncio.create_task(self._ack_quietly())

    async def _ack_quietly(self) -> None:
        while self._playback_acks_due:
            self._playback_acks_due = False
            await asyncio.sleep(0)  # one pass for every response.done already buffered
            if self._terminal or self._finished.is_set():
                return
            with contextlib.suppress(DuplexSessionClosedError):
                await self._ack_finished()

    def acks_expire(self) -> bool:
        """Whether an ack for a response finished before a later commit is refused (§5)."""
        policy = self.session.get("playback_commit_policy") or self.config.playback_commit_policy
        return policy == "ack_only"

    async def send_raw(self, event: dict[str, Any]) -> str | None:
        """Send any event object as is (escape hatch); returns its `event_id` if it has one."""
        await self._send_dict(event)
        eid = event.get("event_id")
        return eid if isinstance(eid, str) else None

    async def wait_committed(
        self, event_id: str, timeout: float | None = None
    ) -> se.InputAudioBufferCommitted:
        """Wait for the acknowledgement of a commit; an error echoing its id raises."""
        async with asyncio.timeout(timeout):  # not wait_for: it can swallow a cancel (3.11)
            result = await self._outcomes.future(event_id)
        assert isinstance(result, se.InputAudioBufferCommitted)
        return result
