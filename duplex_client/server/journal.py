"""The per-session replay journal: `server_event_seq` numbering, acks, replay (protocol.md §6)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One sequenced event as it was sent (encoded bytes), with when it was recorded."""

    seq: int
    data: bytes
    recorded_at: float


class Journal:
    """Unacknowledged sequenced events, bounded by bytes and by age."""

    def __init__(self, max_bytes: int, retention_s: float) -> None:
        self.max_bytes = max_bytes
        self.retention_s = retention_s
        self.last_seq = 0
        self.held_bytes = 0
        self._entries: deque[JournalEntry] = deque()

    @property
    def next_seq(self) -> int:
        """The seq the next recorded event gets."""
        return self.last_seq + 1

    def __len__(self) -> int:
        return len(self._entries)

    def fits(self, size: int) -> bool:
        """Whether an event of `size` bytes can be held without overflowing."""
        return self.held_bytes + size <= self.max_bytes

    def record(self, data: bytes, now: float) -> int:
        """Hold an event stamped with `next_seq`; returns that seq (check `fits` first)."""
        self.last_seq += 1
        self._entries.append(JournalEntry(self.last_seq, data, now))
        self.held_bytes += len(data)
        return self.last_seq

    def ack(self, seq: int) -> bool:
        """Drop events up to `seq`; False (nothing changed) when `seq` was never sent."""
        if seq > self.last_seq:
            return False
        while self._entries and self._entries[0].seq <= seq:
            self.held_bytes -= len(self._entries.popleft().data)
        return True

    def replay_after(self, seq: int) -> list[bytes] | None:
        """Held events with a higher seq, in order; None when some of them are gone (a gap)."""
        if seq >= self.last_seq:
            return []
        first_held = self._entries[0].seq if self._entries else self.last_seq + 1
        if seq + 1 < first_held:
            return None
        return [e.data for e in self._entries if e.seq > seq]

    def evict(self, now: float) -> None:
        """Forget events older than the retention window (a later resume needing them gaps)."""
        horizon = now - self.retention_s
        while self._entries and self._entries[0].recorded_at <= horizon:
            entry = self._entries.popleft()
            self.held_bytes -= len(entry.data)

    def next_expiry(self) -> float | None:
        """When the oldest held event leaves the retention window."""
        return self._entries[0].recorded_at + self.retention_s if self._entries else None
