"""Assistant audio out: a sounddevice output stream, a small jitter buffer, played positions."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from duplex_client.analysis.playback import Heard, MediaTimeOf, device_heard
from duplex_client.media.devices.lookup import (
    DeviceError,
    close_stream,
    load_sounddevice,
    resolve_audio_device,
)

_BPS = 2


@dataclass(slots=True)
class _Track:
    """One response's audio: what is queued, written to the device and known to be played."""

    buf: bytearray = field(default_factory=bytearray)
    ended: bool = False
    started: bool = False
    cleared: bool = False
    written: int = 0
    played: int = 0


class Player:
    """Plays responses in arrival order and knows how much of each the device has rendered.

    A response starts once `jitter_ms` of it is queued (or it has ended), then plays
    gaplessly; an underrun is filled with silence. Every block handed to the device is
    stamped with the output stream's DAC time, so `played_ms(rid)` is what has actually
    been rendered by now on the stream's clock, not what was received or queued.
    `sd` is the sounddevice module (injectable, e.g. a fake in tests).
    """

    def __init__(
        self,
        *,
        sd: Any | None = None,
        device: int | str | None = None,
        sample_rate_hz: int = 24000,
        block_ms: int = 20,
        jitter_ms: int = 80,
        hangover_ms: int = 150,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if sample_rate_hz <= 0 or block_ms <= 0 or jitter_ms < 0:
            raise ValueError("sample_rate_hz and block_ms must be positive, jitter_ms >= 0")
        self.device = device
        self.rate = sample_rate_hz
        self.block_ms = block_ms
        self.jitter = sample_rate_hz * jitter_ms // 1000
        self.hangover_s = hangover_ms / 1000
        self.clock = clock
        self.device_name: str | None = None
        self.underruns = 0
        self._sd = sd
        self._stream: Any = None
        self._stream_clock = False
        self._lock = threading.Lock()
        self._tracks: dict[str, _Track] = {}
        self._order: deque[str] = deque()
        self._flight: deque[tuple[float, str, int]] = deque()
        self._audible_until = 0.0
        #: Every block handed to the device: (monotonic time it starts playing, id, PCM16).
        self.rendered: list[tuple[float, str, bytes]] = []
        #: When each response's first sample played (monotonic): where a listener hears it.
        self.first_rendered: dict[str, float] = {}

    # --- lifecycle ---

    def start(self) -> None:
        """Open and start the output stream (`DeviceError` if PortAudio or the device fails)."""
        sd = self._sd if self._sd is not None else load_sounddevice()
        self._sd = sd
        dev = resolve_audio_device(sd, self.device, "output")
        self.device_name = dev.name
        try:
            self._stream = sd.OutputStream(
                samplerate=self.rate,
                blocksize=self.rate * self.block_ms // 1000,
                device=dev.index,
                channels=1,
                dtype="int16",
                latency="low",
                callback=self._callback,
            )
            self._stream.start()
        except Exception as exc:
            raise DeviceError(f"cannot open the speaker {dev.name!r}: {exc}") from None

    def close(self) -> None:
        """Stop and close the stream (idempotent); nothing queued plays after this."""
        stream, self._stream = self._stream, None
        close_stream(stream)

    # --- feeding (event loop) ---

    def enqueue(self, response_id: str, pcm: bytes) -> bool:
        """Queue PCM16 of a response; False (dropped) once that response was cleared."""
        with self._lock:
            track = self._tracks.get(response_id)
            if track is None:
                track = self._tracks[response_id] = _Track()
                self._order.append(response_id)
            if track.cleared or track.ended:
                return False
            track.buf += pcm[: len(pcm) - len(pcm) % _BPS]
            return True

    def end(self, response_id: str) -> None:
        """No more audio will come for this response (it may start and drain)."""
        with self._lock:
            track = self._tracks.get(response_id)
            if track is not None:
                track.ended = True

    def clear(self, response_id: str, by: str = "client_interrupt") -> bool:
        """Drop the response's queued audio at once; later audio for it is refused.

        `by` (what stopped it) is for other outputs' records; the device needs no reason.
        Returns whether anything was still queued or in flight. Samples already handed to
        the device finish playing and count as played.
        """
        with self._lock:
            track = self._tracks.setdefault(response_id, _Track())
            busy = bool(track.buf) or track.written > track.played
            track.cleared = track.ended = True
            track.buf.clear()
            return busy

    def clear_all(self) -> list[str]:
        """Clear every response with audio queued or in flight; returns their ids."""
        ids = self.active_ids()
        for rid in ids:
            self.clear(rid)
        return ids

    # --- positions ---

    def now(self) -> float:
        """The clock the played positions are measured on (the stream's, when it has one)."""
        stream = self._stream
        if self._stream_clock and stream is not None:
            try:
                return float(stream.time)
            except Exception:
                return self.clock()
        return self.clock()

    def _settle(self, now: float) -> None:
        while self._flight:
            start, rid, n = self._flight[0]
            if start + n / self.rate > now:
                break
            self._flight.popleft()
            self._tracks[rid].played += n

    def played_samples(self, response_id: str) -> int:
        """Samples of the response the device has rendered so far."""
        now = self.now()
        with self._lock:
            self._settle(now)
            track = self._tracks.get(response_id)
            if track is None:
                return 0
            partial = sum(
                min(n, max(0, int((now - start) * self.rate)))
                for start, rid, n in self._flight
                if rid == response_id
            )
            return track.played + partial

    def played_ms(self, response_id: str) -> int:
        """Milliseconds of the response actually played (truncated)."""
        return self.played_samples(response_id) * 1000 // self.rate

    def written_ms(self, response_id: str) -> int:
        """Milliseconds of the response handed to the device."""
        with self._lock:
            track = self._tracks.get(response_id)
            return 0 if track is None else track.written * 1000 // self.rate

    def queued_ms(self, response_id: str) -> int:
        """Milliseconds still queued locally (not yet handed to the device)."""
        with self._lock:
            track = self._tracks.get(response_id)
            return 0 if track is None else len(track.buf) // _BPS * 1000 // self.rate

    def in_flight(self, response_id: str) -> bool:
        """Whether samples handed to the device are not yet rendered."""
        return self.played_samples(response_id) < self._written(response_id)

    def _written(self, response_id: str) -> int:
        with self._lock:
            track = self._tracks.get(response_id)
            return 0 if track is None else track.written

    def drained(self, response_id: str) -> bool:
        """Ended (or cleared), nothing queued, everything handed out rendered."""
        with self._lock:
            track = self._tracks.get(response_id)
            if track is None or not track.ended or track.buf:
                return False
        return not self.in_flight(response_id)

    def active_ids(self) -> list[str]:
        """Responses with audio queued or still playing, oldest first."""
        now = self.now()
        with self._lock:
            self._settle(now)
            flying = {rid for _, rid, _ in self._flight}
            return [
                rid for rid, t in self._tracks.items() if not t.cleared and (t.buf or rid in flying)
            ]

    def playing(self) -> bool:
        """Whether answer audio is queued or playing now."""
        return bool(self.active_ids())

    def heard_start_ms(self, response_id: str, media_ms_at: MediaTimeOf) -> float | None:
        """When the device rendered the response's first block, in media ms (None: not yet)."""
        at = self.first_rendered.get(response_id)
        return None if at is None else media_ms_at(at)

    def heard(self, media_ms_at: MediaTimeOf, cut_by: Mapping[str, str]) -> Heard:
        """What the device rendered, placed on the media clock."""
        return device_heard(list(self.rendered), media_ms_at, self.rate, cut_by)

    def audible(self) -> bool:
        """Whether assistant audio is queued, playing, or stopped less than a hangover ago."""
        now = self.now()
        with self._lock:
            if any(t.buf and not t.cleared for t in self._tracks.values()):
                return True
            return now < self._audible_until + self.hangover_s

    # --- PortAudio thread ---

    def _callback(self, outdata: Any, frames: int, time_info: Any, status: Any) -> None:
        import numpy as np

        dac = float(getattr(time_info, "outputBufferDacTime", 0.0) or 0.0)
        to_monotonic = 0.0
        if dac > 0:
            self._stream_clock = True
            current = float(getattr(time_info, "currentTime", 0.0) or 0.0)
            to_monotonic = self.clock() - current if current > 0 else 0.0
        else:
            latency = getattr(self._stream, "latency", 0.0)
            dac = self.clock() + (latency if isinstance(latency, float) else 0.0)
        out = np.zeros(frames, dtype=np.int16)
        pos = 0
        with self._lock:
            while pos < frames and self._order:
                rid = self._order[0]
                track = self._tracks[rid]
                if track.cleared or (track.ended and not track.buf):
                    self._order.popleft()
                    continue
                if not track.started:
                    if len(track.buf) < self.jitter * _BPS and not track.ended:
                        break
                    track.started = True
                take = min(frames - pos, len(track.buf) // _BPS)
                if take == 0:
                    self.underruns += 1
                    break
                block = bytes(track.buf[: take * _BPS])
                out[pos : pos + take] = np.frombuffer(block, "<i2")
                del track.buf[: take * _BPS]
                at = dac + to_monotonic + pos / self.rate
                self.rendered.append((at, rid, block))
                self.first_rendered.setdefault(rid, at)
                track.written += take
                self._flight.append((dac + pos / self.rate, rid, take))
                pos += take
                self._audible_until = max(self._audible_until, dac + pos / self.rate)
        outdata[:] = out.reshape(-1, 1)
