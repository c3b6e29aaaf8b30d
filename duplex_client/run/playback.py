"""Answers to the speaker: response audio into the player, fencing, and playback acks (§4.4, §5)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from duplex_client.analysis.playback import AudioOutput
from duplex_client.client.session import DuplexClientBase
from duplex_client.protocol import response_events as r
from duplex_client.protocol import server_events as se
from duplex_client.protocol.errors import DuplexSessionClosedError

if TYPE_CHECKING:
    import numpy as np

    from duplex_client.media.resample import Resampler

#: How often the played positions are checked and acks considered (while any is unsettled).
TICK_S = 0.05
#: The longest wait between checks when the output says when the next ack falls due.
LONGEST_WAIT_S = 1.0


class PlaybackSync:
    """Plays a session's responses and reports what was actually played.

    Audio deltas go to the player per `response_id`. A response is fenced, its queued
    audio dropped at once and later audio for it refused, on `output_audio_buffer.cleared`,
    a cancelled `response.done`, `speech_started` while interruption is on (also after its
    `response.done` while audio is still queued), a superseding response, a local barge-in,
    or a mid-answer `response.listen` naming it (the model yielded: its last delta did not
    say `end_of_turn`). Audio at another rate than the speaker's is resampled. Acks carry the
    player's played position: every `ack_every_ms` of progress, on drain, and, once the
    device has rendered what it already had, with `truncate` on fencing. `commit_guard()`
    sends the acks due before a commit (ack-before-commit).
    """

    def __init__(
        self,
        client: DuplexClientBase,
        player: AudioOutput,
        *,
        ack_every_ms: int = 250,
        truncate_wait_s: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.player = player
        self.ack_every_ms = ack_every_ms
        self.truncate_wait_s = truncate_wait_s
        self.clock = clock
        self.dropped_deltas = 0
        self.interruptions = 0
        self.first_played_at: dict[str, float] = {}
        #: Why each fenced response was stopped (an event type, `superseded`, `interrupt`).
        self.cut_by: dict[str, str] = {}
        self._offsets: dict[str, int] = {}
        self._acked: dict[str, int] = {}
        self._final: set[str] = set()
        self._fenced_at: dict[str, float] = {}
        self._resamplers: dict[str, Resampler[np.int16]] = {}
        #: Responses whose last delta said `end_of_turn` (a listen after it is the turn's end).
        self._turn_ended: set[str] = set()
        self._lock = asyncio.Lock()
        #: Set when a response's audio first arrives, it ends or it is fenced: wakes `run`
        #: from a wait (a wakeup of an idle loop costs more CPU than a tick's work).
        self._changed = asyncio.Event()

    def attach(self) -> None:
        """Start receiving the client's events."""
        self.client.add_listener(self.on_event)

    # --- events (reader task, synchronous) ---

    def on_event(self, event: se.ServerEvent, received_at: float) -> None:
        """Route one server event (called after the client's tracker applied it)."""
        if isinstance(event, r.ResponseAudioDelta) and event.response_id is not None:
            if event.end_of_turn:
                self._turn_ended.add(event.response_id)
            self._audio(event.response_id)
        elif isinstance(event, r.ResponseListen) and event.response_id is not None:
            rid = event.response_id
            handle = self.client.tracker.handles.get(rid)
            yielded = rid in self._offsets and rid not in self._turn_ended
            if yielded and handle is not None and not handle.done:
                self.fence(rid, event.type)
        elif isinstance(event, r.ResponseDone) and event.response_id is not None:
            if event.status == "cancelled":
                self.fence(event.response_id, f"cancelled:{event.reason or 'unknown'}")
            else:
                self._end(event.response_id)
        elif isinstance(event, r.OutputAudioBufferCleared) and event.response_id is not None:
            self.fence(event.response_id, event.type)
        elif isinstance(event, r.ConnectionNewSession):
            # A journal gap lost the session: its answers get no `response.done` any more;
            # what arrived of them plays out (their handles end `incomplete`, `session_lost`).
            for rid in self.client.tracker.lost & set(self._offsets):
                self._end(rid)
        elif (
            isinstance(event, se.InputAudioBufferSpeechStarted)
            and self.client.config.interrupts_on_speech
        ):
            for rid in self.player.active_ids():
                self.fence(rid, event.type)
        fenced = self.client.tracker.fenced
        for rid in list(self._offsets):
            if rid in fenced and rid not in self._fenced_at:  # superseded, or a client cancel
                self.fence(rid, "superseded" if self._superseded(rid) else "client_interrupt")

    def _end(self, rid: str) -> None:
        """No more audio for `rid`: the resampler's tail, then the end of its stream."""
        resampler = self._resamplers.pop(rid, None)
        tail = b""
        if resampler is not None:
            tail = resampler.flush().astype("<i2", copy=False).tobytes()
        if tail and rid not in self._fenced_at:
            self.player.enqueue(rid, tail)
        self.player.end(rid)
        self._changed.set()  # its drain is scheduled now

    def _superseded(self, rid: str) -> bool:
        active = self.client.tracker.active
        return active is not None and active.response_id != rid

    def _audio(self, rid: str) -> None:
        handle = self.client.tracker.handles.get(rid)
        if handle is None or handle.fenced or rid in self._final or rid in self._fenced_at:
            self.dropped_deltas += 1
            return
        if rid not in self._offsets:
            self._changed.set()
        done = self._offsets.get(rid, 0)
        pcm = handle.audio_since(done)
        self._offsets[rid] = done + len(pcm)
        if pcm and handle.sample_rate_hz != self.player.rate:
            pcm = self._resampled(rid, handle.sample_rate_hz, pcm)
        if pcm and not self.player.enqueue(rid, pcm):
            self.dropped_deltas += 1

    def _resampled(self, rid: str, rate: int, pcm: bytes) -> bytes:
        """The response's audio at the speaker's rate (the server chose another output rate).

        Runs on the event loop (the reader's listener), as the linear resampler did: a 40 ms
        delta at 24 kHz → 48 kHz costs about 0.05 ms. The output lags by 64 samples at the
        lower rate (2.7 ms at 24 kHz), given at `response.done`.
        """
        from duplex_client.media.resample import Resampler

        resampler = self._resamplers.get(rid)
        if resampler is None or resampler.in_rate != rate:
            resampler = self._resamplers[rid] = Resampler(rate, self.player.rate)
        return resampler.process(pcm).astype("<i2", copy=False).tobytes()

    def fence(self, rid: str, by: str = "client_interrupt") -> bool:
        """Stop a response's playback now (`by`: what stopped it); whether it was audible."""
        if rid in self._fenced_at:
            return False
        self.client.tracker.fence(rid)
        busy = self.player.clear(rid, by)
        self._fenced_at[rid] = self.clock()
        self._changed.set()
        if busy:
            self.interruptions += 1
            self.cut_by[rid] = by
        return busy

    async def barge_in(self) -> bool:
        """The user interrupts: cancel the active response and silence everything queued."""
        tracker = self.client.tracker
        active = tracker.active
        stopped = False
        if active is not None and not active.done and active.response_id is not None:
            if active.response_id not in tracker.fenced:
                with contextlib.suppress(DuplexSessionClosedError):
                    await self.client.cancel_response(active.response_id)
            self.fence(active.response_id)
            stopped = True
        for rid in self.player.active_ids():
            stopped = self.fence(rid) or stopped
        return stopped

    # --- acks ---

    async def run(self) -> None:
        """Check positions and send due acks until cancelled: every `TICK_S` while a response
        is unsettled, or, when the output can say (`ms_until`, the listener model), when the
        next ack falls due; with none unsettled it waits for answer audio."""
        while True:
            if self._settled():
                self._changed.clear()
                await self._changed.wait()
            wait = self._wait_s()
            if wait > TICK_S:  # woken early by a new answer, an end or a fence
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), wait)
            else:
                await asyncio.sleep(TICK_S)
            await self.tick()

    def _settled(self) -> bool:
        """Whether every response that played has had its final ack (no tick has work)."""
        return all(rid in self._final for rid in self._offsets)

    def _wait_s(self) -> float:
        """Seconds until a check can have work: `TICK_S` unless the output says when each
        unsettled response's next progress ack or drain is due."""
        until = getattr(self.player, "ms_until", None)
        if until is None:
            return TICK_S
        soonest = LONGEST_WAIT_S * 1000
        for rid in self._offsets:
            if rid in self._final:
                continue
            due = None if rid in self._fenced_at else until(rid, self._next_ack_ms(rid))
            if due is None:  # its truncating ack, or audio yet to come: look every tick
                return TICK_S
            soonest = min(soonest, due)
        return max(TICK_S, (soonest + 1) / 1000)  # 1 ms past: the position reads as due

    def _next_ack_ms(self, rid: str) -> int:
        """The played position at which the response's next progress ack is due."""
        return self._acked.get(rid, 0) + self.ack_every_ms

    async def tick(self) -> None:
        """One pass: update played positions and send the acks that are due."""
        async with self._lock:
            for rid in list(self._offsets):
                await self._check(rid)

    async def _check(self, rid: str) -> None:
        if rid in self._final:
            return
        handle = self.client.tracker.handles.get(rid)
        played = self.player.played_ms(rid)
        if played and rid not in self.first_played_at:
            self.first_played_at[rid] = self.clock()
        if handle is not None:
            handle.played_ms = max(handle.played_ms, played)
            if handle.done and handle.acked_ms not in (None, self._acked.get(rid)):
                self._final.add(rid)  # acked by the client before a commit: sealed
                return
            if handle.sealed and self.client.acks_expire():
                self._final.add(rid)  # a later commit sealed it: an ack would be refused
                return
        fenced_at = self._fenced_at.get(rid)
        if fenced_at is not None:
            waited = self.clock() - fenced_at
            if not self.player.in_flight(rid) or waited >= self.truncate_wait_s:
                await self._ack(rid, played, truncate=True, final=True)
        elif self.player.drained(rid):
            await self._ack(rid, played, final=True)
        elif played - self._acked.get(rid, 0) >= self.ack_every_ms:
            await self._ack(rid, played)

    async def _ack(
        self, rid: str, played: int, *, truncate: bool = False, final: bool = False
    ) -> None:
        if final:
            self._final.add(rid)
        if played < self._acked.get(rid, 0):
            played = self._acked[rid]
        self._acked[rid] = played
        # a server that says it cannot truncate (personaplex, nemotron) gets the position only
        truncate = (
            truncate and self.client.capabilities.raw.get("supports_audio_truncate") is not False
        )
        with contextlib.suppress(DuplexSessionClosedError):
            await self.client.ack_playback(played, response_id=rid, truncate=truncate)

    @contextlib.asynccontextmanager
    async def commit_guard(self) -> AsyncIterator[None]:
        """Hold acks while a commit is sent; first ack every finished response (§5)."""
        async with self._lock:
            for rid in list(self._offsets):
                handle = self.client.tracker.handles.get(rid)
                if rid in self._final or handle is None or not handle.done:
                    continue
                cut = handle.fenced or rid in self._fenced_at
                await self._ack(rid, self.player.played_ms(rid), truncate=cut, final=True)
            yield

    async def close(self) -> None:
        """Final acks before the session closes: what was played, `truncate` if cut short."""
        async with self._lock:
            for rid in list(self._offsets):
                if rid in self._final:
                    continue
                handle = self.client.tracker.handles.get(rid)
                if (
                    handle is not None
                    and handle.done
                    and handle.acked_ms
                    not in (
                        None,
                        self._acked.get(rid),
                    )
                ):
                    continue
                cut = rid in self._fenced_at or not self.player.drained(rid)
                await self._ack(rid, self.player.played_ms(rid), truncate=cut, final=True)

    def acked_ms(self, rid: str) -> int | None:
        """The last played position acked for a response."""
        return self._acked.get(rid)
