"""What the client recently sent, unit by unit, so a late server commit can re-anchor the grid.

Under server VAD the server seals a turn at the end of whichever append made it detect the
end of speech, and re-anchors its unit grid there (protocol.md §3.1). The client learns of it
one round trip later, by which time it may have sent more appends, closing units on a grid
the server no longer uses. `UnitHistory` keeps the recent units and append ends; `replay`
works out the server's numbering from the commit position on, as the server assigned it:
the residual closes the unit the commit fell in, audio units follow on the new grid and
VISION units take the next index in the order they arrived.

Sans-I/O and pure: positions are cumulative audio samples.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

#: Units and append ends remembered: minutes of input at the usual 1 s units and 200 ms appends,
#: far more than any round trip.
HISTORY_UNITS = 256
HISTORY_APPENDS = 1024


@dataclass(frozen=True, slots=True)
class SentUnit:
    """One unit as numbered on the wire: `audio_unit` None is a VISION unit at `end` (= `start`)."""

    unit_index: int
    audio_unit: int | None
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class GridState:
    """Where the grid stands after a re-anchor: the next unit's numbers and where it starts."""

    unit_index: int
    audio_unit: int
    unit_start: int


class UnitHistory:
    """The recent units (as the server numbered them) and the ends of recent appends."""

    def __init__(self) -> None:
        self.units: deque[SentUnit] = deque(maxlen=HISTORY_UNITS)
        self.append_ends: deque[int] = deque(maxlen=HISTORY_APPENDS)

    def sent_append(self, end: int) -> None:
        """An audio-bearing append ending at cumulative sample `end` was released."""
        self.append_ends.append(end)

    def closed(self, unit: SentUnit) -> None:
        """A unit was closed (by an audio append or as a VISION unit)."""
        self.units.append(unit)

    def snap(self, at: int, slack: int) -> int:
        """`at` moved to the nearest append end within `slack` samples (the server rounds to ms)."""
        best, gap = at, slack + 1
        for end in reversed(self.append_ends):
            if abs(end - at) < gap:
                best, gap = end, abs(end - at)
            if end < at - slack:
                break
        return best

    def closing_within(self, start: int, end: int) -> SentUnit | None:
        """The last audio unit an append spanning samples (start, end] closes, if any."""
        for unit in reversed(self.units):
            if unit.audio_unit is not None and start < unit.end <= end:
                return unit
            if unit.end <= start:
                return None
        return None

    def replay(
        self,
        at: int,
        open_unit: SentUnit,
        audio: int,
        unit_length: Callable[[int], int],
    ) -> GridState | None:
        """The grid after a commit sealed the turn at `at` (None: `at` is on a boundary).

        `open_unit` is the partly filled unit (its `end` is the audio sent so far, `audio`).
        The history is rewritten to the server's numbering of everything sent since.
        """
        units = list(self.units)
        pos = next((i for i in range(len(units) - 1, -1, -1) if _inside(units[i], at)), None)
        if pos is None:
            if open_unit.start < at <= open_unit.end:
                pos = len(units)
                units.append(open_unit)
            else:
                return None
        hit = units[pos]
        assert hit.audio_unit is not None
        visions = deque(u for u in units[pos + 1 :] if u.audio_unit is None)
        rebuilt = [*units[:pos], SentUnit(hit.unit_index, hit.audio_unit, hit.start, at)]
        index, audio_unit, start = hit.unit_index + 1, hit.audio_unit + 1, at
        while True:
            end = start + unit_length(audio_unit)
            # A VISION unit sent at audio position a came after every append ending at or before a.
            while visions and visions[0].end < min(end, audio + 1):
                v = visions.popleft()
                rebuilt.append(SentUnit(index, None, v.end, v.end))
                index += 1
            if end > audio:
                break
            rebuilt.append(SentUnit(index, audio_unit, start, end))
            index, audio_unit, start = index + 1, audio_unit + 1, end
        self.units.clear()
        self.units.extend(rebuilt)
        return GridState(index, audio_unit, start)


def _inside(unit: SentUnit, at: int) -> bool:
    """Whether `at` falls strictly inside an audio unit (its ends are boundaries)."""
    return unit.audio_unit is not None and unit.start < at < unit.end
