"""The bounds of the numeric options, and `check_number`, the one check of each."""

from __future__ import annotations

import math
import numbers
from typing import Any

from duplex_client.protocol.capabilities import DEFAULT_CHUNK_PERIOD_MS, DEFAULT_FIRST_UNIT_MS
from duplex_client.usage import UsageError

#: The longest append by default; a grid with shorter units cuts it to one unit, unnoted.
DEFAULT_CHUNK_MS = 200
#: The longest append the framer makes: appends never cross a unit boundary, so a longer
#: `chunk_ms` would be cut to one unit (the default grid's units are 1000 ms).
MAX_CHUNK_MS = max(DEFAULT_FIRST_UNIT_MS, DEFAULT_CHUNK_PERIOD_MS)
#: The bound of every duration option (tail silence, timeouts, settle time), in seconds.
MAX_SECONDS = 3600.0

#: Bounds of the numeric options: (low, high), both included.
LIMITS: dict[str, tuple[float, float]] = {
    "video_fps": (0.0, 120.0),  # the low bound is excluded (see `_OPEN_LOW`)
    "frame_max_side": (0, 8192),
    "stack_frames": (1, 16),
    "jpeg_quality": (1, 100),
    "chunk_ms": (1, MAX_CHUNK_MS),
    "jitter_ms": (0, 10_000),
    "reconnect_attempts": (1, 100),
    "tail_silence_s": (0.0, MAX_SECONDS),
    "timeout_s": (0.0, MAX_SECONDS),
    "settle_s": (0.0, MAX_SECONDS),
    "handshake_timeout_s": (0.0, MAX_SECONDS),
    "duration_s": (0.0, MAX_SECONDS),
    "max_lateness_ms": (0.0, MAX_SECONDS * 1000),
}
#: Numeric options whose None means "the input's default".
OPTIONAL_NUMBERS = frozenset({"frame_max_side", "jpeg_quality", "duration_s"})
_INTEGERS = frozenset({"frame_max_side", "stack_frames", "jpeg_quality", "chunk_ms"})
_INTEGERS |= {"reconnect_attempts", "jitter_ms"}
#: Options that must be above their low bound, not equal to it ("must be positive").
_OPEN_LOW = frozenset({"video_fps", "timeout_s", "handshake_timeout_s", "duration_s"})
_OPEN_LOW |= {"max_lateness_ms"}
#: Integer options whose low bound 1 reads "must be positive".
_POSITIVE = frozenset({"chunk_ms"})
#: Why a bound is what it is, for the message.
_WHY = {
    "chunk_ms": " (the longest append the framer makes: one unit)",
}
_UNITS = {"tail_silence_s": " s", "timeout_s": " s", "settle_s": " s", "duration_s": " s"}
_UNITS |= {"handshake_timeout_s": " s", "chunk_ms": " ms", "jitter_ms": " ms"}
_UNITS |= {"max_lateness_ms": " ms"}


def check_number(name: str, value: Any) -> None:
    """Raise `UsageError` (one line, naming `name`) unless `value` is within its bounds."""
    low, high = LIMITS[name]
    unit = _UNITS.get(name, "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        what = "an integer" if name in _INTEGERS else "a number"
        raise UsageError(f"{name} must be {what}, got {value!r}", param=name)
    if isinstance(value, numbers.Integral):
        number: int | float = int(value)
        shown = str(number)
        if len(shown) > 16:  # a huge integer: its order of magnitude is enough
            digits = shown.lstrip("-")
            shown = f"{shown[: len(shown) - len(digits)]}{digits[0]}e+{len(digits) - 1}"
    elif name in _INTEGERS:
        raise UsageError(f"{name} must be an integer, got {value!r}", param=name)
    else:
        number = float(value)
        shown = f"{number:g}"
        if not math.isfinite(number):
            raise UsageError(f"{name} must be a finite number, got {shown}", param=name)
    if name in _OPEN_LOW and number <= low:
        raise UsageError(f"{name} must be positive, got {shown}", param=name)
    if number < low:
        rule = "positive" if name in _POSITIVE else f">= {low:g}"
        raise UsageError(f"{name} must be {rule}, got {shown}", param=name)
    if number > high:
        raise UsageError(
            f"{name} must be at most {high:g}{unit}{_WHY.get(name, '')}, got {shown}",
            param=name,
        )
