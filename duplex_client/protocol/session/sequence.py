"""Seq/ack bookkeeping of the server's journal (protocol.md §6), sans-I/O."""

from __future__ import annotations

from typing import Literal

AckTiming = Literal["now", "schedule"]


class EventSequence:
    """Drops replayed seqs and says when an ack is due, and for which seq.

    An ack is made once idle (the shell's timer, `fired` then `take`), or at once after
    `ack_every` unacknowledged events. Acks are cumulative, so coalescing loses nothing.
    """

    def __init__(self, ack_every: int | None = None) -> None:
        if ack_every is not None and ack_every < 1:
            raise ValueError(f"ack_every must be at least 1, got {ack_every}")
        self.ack_every = ack_every
        #: The highest seq processed.
        self.last = 0
        #: The highest seq an ack was made for.
        self.acked = 0
        self._unacked = 0
        self._armed = False

    def fresh(self, seq: int) -> bool:
        """Record `seq`; False for a replay (already processed)."""
        if seq <= self.last:
            return False
        self.last = seq
        return True

    def due(self) -> AckTiming | None:
        """An event to acknowledge was processed: ack `now`, `schedule` one, or None (armed)."""
        self._unacked += 1
        if self.ack_every is not None and self._unacked >= self.ack_every:
            return "now"
        if self._armed:
            return None
        self._armed = True
        return "schedule"

    def fired(self) -> None:
        """The scheduled ack's timer fired (the next event schedules a new one)."""
        self._armed = False

    def take(self) -> int | None:
        """The seq to acknowledge now (it counts as acknowledged), or None if nothing is new."""
        if self.last <= self.acked:
            return None
        self.acked, self._unacked = self.last, 0
        return self.acked
