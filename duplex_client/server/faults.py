"""Fault injection: unit latency, slow units, socket drops, injected errors, slow handshakes."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from duplex_client.protocol import codec
from duplex_client.protocol.codec import CodecError


class FaultSpecError(ValueError):
    """A `--faults` value or file could not be parsed."""


@dataclass(frozen=True, slots=True)
class Faults:
    """Which faults to inject; the default injects none."""

    #: Processing time added to every unit before its decision is emitted.
    unit_latency_ms: int = 0
    #: unit_index → processing ms for that unit (slower than real time when > unit length).
    slow_units: dict[int, int] = field(default_factory=dict)
    #: Drop (abort) the socket each time the session has sent this many more events ...
    drop_after_events: int | None = None
    #: ... up to this many times per session (replayed events count too).
    drop_times: int = 1
    #: Inject this error code when unit `error_at_unit` is processed (fatal codes end the session).
    error_code: str | None = None
    error_at_unit: int = 0
    #: Delay before `session.created` is sent.
    created_delay_ms: int = 0

    def unit_processing_ms(self, unit_index: int) -> int:
        """Processing time of one unit."""
        return self.slow_units.get(unit_index, 0) + self.unit_latency_ms

    @property
    def active(self) -> bool:
        """Whether any fault is configured."""
        return self != Faults()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Faults:
        """Build from a JSON object with the field names above."""
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise FaultSpecError(f"unknown fault keys: {sorted(unknown)}")
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key == "slow_units":
                if not isinstance(value, dict):
                    raise FaultSpecError("slow_units must map unit index to milliseconds")
                kwargs[key] = {_nonneg(k, key): _nonneg(v, key) for k, v in value.items()}
            elif key == "error_code":
                if value is not None and not isinstance(value, str):
                    raise FaultSpecError("error_code must be a string")
                kwargs[key] = value
            elif key == "drop_after_events":
                kwargs[key] = None if value is None else max(1, _nonneg(value, key))
            elif key == "drop_times":
                kwargs[key] = 1 if value is None else max(1, _nonneg(value, key))
            else:
                kwargs[key] = _nonneg(value, key)
        return cls(**kwargs)

    @classmethod
    def parse(cls, spec: str) -> Faults:
        """Parse `k=v,k=v` (slow units as `slow_unit=3:1500`), inline JSON or a JSON file path."""
        spec = spec.strip()
        if not spec:
            return cls()
        if spec.startswith("{"):
            return cls.from_dict(_json(spec, "inline JSON"))
        path = Path(spec)
        if spec.endswith(".json") or path.is_file():
            try:
                return cls.from_dict(_json(path.read_text(encoding="utf-8"), str(path)))
            except OSError as exc:
                raise FaultSpecError(f"cannot read faults file {spec}: {exc}") from None
        data: dict[str, Any] = {}
        slow: dict[int, int] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            key, sep, value = part.partition("=")
            if not sep:
                raise FaultSpecError(f"expected key=value, got {part!r}")
            if key == "slow_unit":
                index, colon, ms = value.partition(":")
                if not colon:
                    raise FaultSpecError("slow_unit takes INDEX:MS, e.g. slow_unit=3:1500")
                slow[_nonneg(index, key)] = _nonneg(ms, key)
            elif key == "error_code":
                data[key] = value
            else:
                data[key] = value
        if slow:
            data["slow_units"] = slow
        return cls.from_dict(data)


def _nonneg(value: Any, key: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise FaultSpecError(f"{key} must be a non-negative integer, got {value!r}") from None
    if isinstance(value, bool) or number < 0:
        raise FaultSpecError(f"{key} must be a non-negative integer, got {value!r}")
    return number


def _json(text: str, where: str) -> dict[str, Any]:
    try:
        return codec.loads(text)
    except CodecError as exc:
        raise FaultSpecError(f"{where}: {exc}") from None
