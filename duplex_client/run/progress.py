"""What a run shows while it runs, updated in place for a display to poll (stream and live)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(slots=True)
class RunProgress:
    """Live state of a run, updated in place for a display to poll.

    `phase`, `media_total_ms`, `warnings` and `stop_reason` are always kept. The file-run
    figures (times, counts, lateness, decisions, transcript) are refreshed ten times a
    second while `figures` is True; a live run's device source keeps its own (levels,
    switches, the assistant's state, latency) as blocks are captured.
    """

    phase: str = "starting"
    media_ms: int = 0
    media_total_ms: int = 0
    wall_s: float = 0.0
    units: dict[str, int] = field(default_factory=lambda: {"AUDIO": 0, "OMNI": 0, "VISION": 0})
    appends: int = 0
    commits: int = 0
    decisions: list[tuple[int | None, str]] = field(default_factory=list)
    transcript: str = ""
    lateness_p50_ms: float | None = None
    lateness_max_ms: float | None = None
    heard_latency_p50_ms: float | None = None
    heard_latency_max_ms: float | None = None
    warnings: list[str] = field(default_factory=list)
    #: Why the run is being cancelled, set by whoever cancels it (`terminated`, `hangup`);
    #: None reads as `interrupted` (Ctrl-C).
    stop_reason: str | None = None
    #: Whether the run keeps the file-run figures up to date (about ten times a second). Off
    #: when nothing shows or logs them (a run's own default progress, `--quiet`, `--json`).
    figures: bool = True
    #: The run's bundle, once it is open (a stopped run's caller names it, and what a forced
    #: exit left incomplete).
    bundle_dir: Path | None = None
    # --- a live run's figures, kept by its device source ---
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
    #: The assistant's state: `listening`, `thinking`, `speaking`, `interrupted`, ...
    decision: str = "-"
    #: The last answers' transcripts, one line each.
    transcript_lines: list[str] = field(default_factory=list)
    last_latency_ms: float | None = None
    latency_p50_ms: float | None = None
    latency_max_ms: float | None = None
    interruptions: int = 0
    keys: str = ""
    #: Told each new warning as it is noted (an eval shows its items' lost timing live).
    listener: Callable[[str], None] | None = field(default=None, repr=False, compare=False)

    def warn(self, message: str) -> None:
        """Note a one-line warning for the display (and the result), once."""
        if message not in self.warnings:
            self.warnings.append(message)
            if self.listener is not None:
                self.listener(message)


#: The old name of a live run's progress (one progress for every way in now).
LiveProgress = RunProgress
