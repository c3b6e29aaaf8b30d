"""What a run reports: live progress for displays and the final `RunResult` (`result.json`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.client.responses import ResponseHandle

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: `ok` covers transport and lifecycle only; this sentence travels with every result.
OK_MEANING = (
    "ok means the session opened, reached a decision, closed cleanly and reported no errors; "
    "it says nothing about whether the answers are correct"
)


@dataclass(slots=True)
class RunProgress:
    """Live state of a run, updated in place for a display to poll."""

    phase: str = "starting"
    media_ms: int = 0
    media_total_ms: int = 0
    wall_s: float = 0.0
    units: dict[str, int] = field(default_factory=lambda: {"AUDIO": 0, "OMNI": 0, "VISION": 0})
    appends: int = 0
    decisions: list[tuple[int | None, str]] = field(default_factory=list)
    transcript: str = ""
    lateness_p50_ms: float | None = None
    lateness_max_ms: float | None = None


def handle_record(handle: ResponseHandle, origin: float) -> dict[str, Any]:
    """One response (or standalone listen) as a JSON-ready row; times in ms from `origin`."""

    def at(t: float | None) -> float | None:
        return None if t is None else round((t - origin) * 1000.0, 3)

    return {
        "response_id": handle.response_id,
        "decision": handle.decision,
        "status": handle.status,
        "reason": handle.reason,
        "unit_index": handle.metadata.get("unit_index"),
        "unit_kind": handle.metadata.get("unit_kind"),
        "audio_unit_index": handle.metadata.get("audio_unit_index"),
        "audio_ms": handle.audio_ms,
        "transcript": handle.transcript,
        "text": handle.text,
        "created_ms": at(handle.created_at),
        "first_audio_ms": at(handle.first_audio_at),
        "done_ms": at(handle.done_at),
    }


@dataclass(slots=True)
class RunResult:
    """The outcome of one streamed run; the same object the CLI prints and `result.json` holds."""

    ok: bool
    status: str
    exit_code: int
    error: str | None = None
    session_id: str | None = None
    model: str | None = None
    url: str | None = None
    bundle_dir: Path | None = None
    started_at: str | None = None
    duration_s: float = 0.0
    closed_reason: str | None = None
    server_errors: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    latencies_ms: dict[str, float | None] = field(default_factory=dict)
    lateness_ms: dict[str, float] | None = None
    timeline: dict[str, Any] | None = None

    @property
    def transcript(self) -> str:
        """The answers' transcripts (or text) in order, one line per spoken response."""
        return "\n".join(
            d["transcript"] or d["text"]
            for d in self.decisions
            if d["decision"] == "speak" and (d["transcript"] or d["text"])
        )

    @property
    def audio(self) -> npt.NDArray[np.int16]:
        """All kept answer audio (`output.wav`) as int16 samples at 24 kHz."""
        import numpy as np

        from duplex_client.wavfile import read_wav_pcm16

        if self.bundle_dir is None or not (self.bundle_dir / "output.wav").exists():
            return np.zeros(0, dtype=np.int16)
        pcm, _ = read_wav_pcm16(self.bundle_dir / "output.wav")
        return np.frombuffer(pcm, dtype=np.int16)

    def to_dict(self) -> dict[str, Any]:
        """The `result.json` document (no secrets: ids, counts, times and text only)."""
        return {
            "ok": self.ok,
            "ok_means": OK_MEANING,
            "status": self.status,
            "exit_code": self.exit_code,
            "error": self.error,
            "session_id": self.session_id,
            "model": self.model,
            "url": self.url,
            "bundle_dir": str(self.bundle_dir) if self.bundle_dir else None,
            "started_at": self.started_at,
            "duration_s": round(self.duration_s, 3),
            "closed_reason": self.closed_reason,
            "server_errors": self.server_errors,
            "decisions": self.decisions,
            "counts": self.counts,
            "latencies_ms": self.latencies_ms,
            "lateness_ms": self.lateness_ms,
            "transcript": self.transcript,
        }
