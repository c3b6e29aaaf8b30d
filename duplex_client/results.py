"""What a run reports: live progress for displays and the final `RunResult` (`result.json`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.client.responses import ResponseHandle

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from duplex_client.bundle import RunBundle
    from duplex_client.client.session import DuplexClientBase
    from duplex_client.framing.timeline import InputTimeline

#: `ok` covers transport and lifecycle only; this sentence travels with every result.
OK_MEANING = (
    "ok means the session opened, closed cleanly and reported no errors (and, for a streamed "
    "input, reached a listen/speak decision); it says nothing about whether answers are correct"
)
#: Exit codes shared by `stream` and `live`.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


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


def session_handles(client: DuplexClientBase) -> list[ResponseHandle]:
    """Every response and standalone listen of a session, in creation order."""
    tracker = client.tracker
    return sorted([*tracker.handles.values(), *tracker.listens], key=lambda h: h.created_at)


def record_session(
    result: RunResult,
    client: DuplexClientBase,
    timeline: InputTimeline,
    bundle: RunBundle,
    started: float,
) -> list[ResponseHandle]:
    """Fill what every run reports: ids, errors, decisions, counts, lateness and timeline."""
    result.duration_s = time.monotonic() - started
    result.session_id = client.session_id
    result.closed_reason = client.closed_reason
    result.server_errors = [
        {"code": e.error.code, "message": e.error.message, "event_id": e.error.event_id}
        for e in client.errors
    ]
    clock = timeline.clock
    origin = clock.t0 if clock is not None and clock.started else started
    handles = session_handles(client)
    result.decisions = [handle_record(h, origin) for h in handles]
    totals = timeline.totals()
    result.lateness_ms = totals["lateness_ms"]
    keys = ("appends", "audio_ms", "units", "fallback_units", "frames", "commits")
    result.counts = {
        **{k: totals[k] for k in keys},
        "responses": len(client.tracker.handles),
        "speak": sum(1 for h in handles if h.decision == "speak"),
        "listen": sum(1 for h in handles if h.decision == "listen"),
        "events": bundle.event_count,
        "output_audio_ms": bundle.output_ms,
        "reconnects": len(client.reconnects),
        "resent_appends": totals["resends"],
    }
    result.timeline = timeline.to_dict()
    return handles


def judge(
    result: RunResult,
    client: DuplexClientBase,
    *,
    need_decision: bool,
    benign: frozenset[str] = frozenset(),
) -> None:
    """Settle `ok`: closed on request, no (non-benign) server error, a decision if needed."""
    if not result.ok:
        return
    problems = []
    if client.closed_reason != "client_close":
        problems.append(f"session ended with {client.closed_reason!r}")
    codes = [str(e["code"]) for e in result.server_errors if e["code"] not in benign]
    if codes:
        problems.append(f"server reported errors: {', '.join(codes)}")
    if need_decision and not any(d["decision"] for d in result.decisions):
        problems.append("no listen/speak decision was reached")
    if problems:
        result.ok, result.status, result.exit_code = False, "failed", EXIT_FAILED
        result.error = "; ".join(problems)
    else:
        result.exit_code = EXIT_OK
