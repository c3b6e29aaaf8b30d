"""What a live run shows while it runs: updated in place for a display to poll."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class LiveProgress:
    """The state of a live session for a display (levels, switches, decisions, latency)."""

    phase: str = "starting"
    turn: str = "model"
    ptt_mode: str = "toggle"
    mic: str = "-"
    mic_level_dbfs: float = -96.0
    muted: bool = False
    camera: str | None = None
    camera_on: bool = False
    frames_sent: int = 0
    talking: bool = False
    echo_gate: bool = False
    gated: bool = False
    audible: bool = False
    media_ms: int = 0
    appends: int = 0
    units: dict[str, int] = field(default_factory=lambda: {"AUDIO": 0, "OMNI": 0, "VISION": 0})
    commits: int = 0
    decision: str = "-"
    transcript: list[str] = field(default_factory=list)
    last_latency_ms: float | None = None
    latency_p50_ms: float | None = None
    latency_max_ms: float | None = None
    interruptions: int = 0
    warnings: list[str] = field(default_factory=list)
    keys: str = ""
    #: Why the run was stopped from outside (`terminated`, `hangup`), set before cancelling it;
    #: None: Ctrl-C or a cancel (status `interrupted`).
    stop_reason: str | None = None

    def warn(self, message: str) -> None:
        """Add a warning once."""
        if message not in self.warnings:
            self.warnings.append(message)
