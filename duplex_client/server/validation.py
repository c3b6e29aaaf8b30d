"""Range checks for the reference server's options: one `ServerConfigError` naming the option."""

from __future__ import annotations

import math


class ServerConfigError(ValueError):
    """An out-of-range or ill-typed server option.

    `option` is the Python keyword (`first_unit_ms`, `max_sessions`, `faults.drop_times`),
    `reason` the message without it; `str(exc)` is both (`first_unit_ms must be ...`).
    """

    def __init__(self, option: str, reason: str) -> None:
        super().__init__(f"{option} {reason}")
        self.option = option
        self.reason = reason


def check_int(option: str, value: object, low: int, high: int, unit: str = "") -> None:
    """`value` is an integer (not a bool) within `low..high`."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        suffix = f" {unit}" if unit else ""
        raise ServerConfigError(
            option, f"must be an integer in {low}..{high}{suffix}, got {value!r}"
        )


def check_positive(option: str, value: object, high: float, unit: str = "") -> None:
    """`value` is a finite number above 0 and at most `high` (ints and floats; not a bool)."""
    ok = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and 0 < value <= high
    )
    if not ok:
        suffix = f" {unit}" if unit else ""
        raise ServerConfigError(
            option, f"must be a number above 0 and at most {high:g}{suffix}, got {value!r}"
        )
