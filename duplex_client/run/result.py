"""What a run reports: live progress for displays and the final `RunResult` (`result.json`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.bundle.layout import CONVERSATION_FILE, HEARD_FILE, OUTPUT_FILE, BundleLayout
from duplex_client.client.responses import ResponseHandle
from duplex_client.run.progress import RunProgress

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd
    from matplotlib.figure import Figure

    from duplex_client.analysis.turns import Turn
    from duplex_client.bundle.writer import RunBundle
    from duplex_client.client.session import DuplexClientBase
    from duplex_client.framing.timeline import InputTimeline
    from duplex_client.run.listening import RunListening

__all__ = [
    "EXIT_FAILED",
    "EXIT_HANGUP",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "OK_MEANING",
    "RunProgress",
    "RunResult",
    "judge",
    "judge_timing",
    "record_listening",
    "record_session",
    "session_handles",
    "stop_status",
]

#: `ok` covers transport and lifecycle only; this sentence travels with every result.
OK_MEANING = (
    "ok means the session opened, closed cleanly and reported no errors (and, for a streamed "
    "input, reached a listen/speak decision); it says nothing about whether answers are correct"
)
#: Exit codes shared by `stream` and `live`.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
#: A run stopped by SIGTERM / SIGHUP (128 + the signal number), as a shell reports it.
EXIT_TERMINATED, EXIT_HANGUP = 143, 129
#: The exit code of a cancelled run by its `RunProgress.stop_reason` (else EXIT_INTERRUPTED).
STOP_EXIT_CODES = {"terminated": EXIT_TERMINATED, "hangup": EXIT_HANGUP}


def stop_status(reason: str | None) -> tuple[str, int]:
    """The status and exit code of a cancelled run: `interrupted` 130 unless told otherwise."""
    status = reason or "interrupted"
    return status, STOP_EXIT_CODES.get(status, EXIT_INTERRUPTED)


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
        "decided_ms": at(handle.decided_at),
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
    #: Every session of the run when a journal gap replaced one (empty: just `session_id`).
    session_ids: list[str] = field(default_factory=list)
    #: How a continuous stream ended: its drained response (None: not a continuous stream).
    stream_end: dict[str, Any] | None = None
    model: str | None = None
    url: str | None = None
    #: The wire the endpoint spoke (docs/dialects.md).
    dialect: str = "duplex"
    bundle_dir: Path | None = None
    started_at: str | None = None
    duration_s: float = 0.0
    closed_reason: str | None = None
    server_errors: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    latencies_ms: dict[str, float | None] = field(default_factory=dict)
    lateness_ms: dict[str, float] | None = None
    #: Whether the sends kept to the media clock (`analysis.timing`; None: nothing to judge,
    #: not paced in real time, or a live input), and why not.
    timing_valid: bool | None = None
    timing_reason: str | None = None
    timeline: dict[str, Any] | None = None
    #: `realtime` (times are media time, the listener is measured) or `not_realtime`.
    timing: str = "realtime"
    turns: list[Turn] | None = None
    metrics: dict[str, Any] | None = None
    #: The user-speech segments turns were measured against (annotation or VAD), media ms.
    user_speech: list[dict[str, float]] | None = None
    warnings: list[str] = field(default_factory=list)
    listening_error: str | None = None
    #: Every function call the server made and its answer (`CallRecord.to_dict()`).
    function_calls: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def load(cls, bundle_dir: str | os.PathLike[str]) -> RunResult:
        """Reopen a finished run from its bundle (`result.json`, read by `bundle.reader`): the
        same fields, turns as `Turn`s, the timeline, and `bundle_dir` where it is now.

        Not a bundle, or one of another schema: `BundleError` (a `UsageError`), one line.
        """
        from duplex_client.analysis.turns import Turn
        from duplex_client.bundle.reader import BundleError, read_document, read_result

        path = Path(bundle_dir)
        doc = read_result(path)
        known = {f.name for f in fields(cls)} - {"bundle_dir", "turns", "timeline"}
        result = cls(**{k: v for k, v in doc.items() if k in known})
        result.bundle_dir = path
        names = {f.name for f in fields(Turn)}
        rows = doc.get("turns")
        if isinstance(rows, list):
            try:
                result.turns = [Turn(**{k: v for k, v in r.items() if k in names}) for r in rows]
            except (TypeError, AttributeError) as exc:
                message = f"{path}: result.json `turns` are not turn rows ({exc})"
                raise BundleError(message) from None
        result.timeline = read_document(BundleLayout(path).timeline)
        return result

    @property
    def transcript(self) -> str:
        """The answers' transcripts (or text) in order, one line per spoken response."""
        return "\n".join(
            d["transcript"] or d["text"]
            for d in self.decisions
            if d["decision"] == "speak" and (d["transcript"] or d["text"])
        )

    def _wav(self, name: str) -> npt.NDArray[np.int16]:
        import numpy as np

        from duplex_client.bundle.wavfile import read_wav_int16

        if self.bundle_dir is None or not (self.bundle_dir / name).exists():
            return np.zeros(0, dtype=np.int16)
        return read_wav_int16(self.bundle_dir / name)

    @property
    def audio(self) -> npt.NDArray[np.int16]:
        """All kept answer audio (`output.wav`) as int16 samples at 24 kHz."""
        return self._wav(OUTPUT_FILE)

    @property
    def heard(self) -> npt.NDArray[np.int16]:
        """What the listener heard (`heard.wav`): int16, sample 0 = media time 0."""
        return self._wav(HEARD_FILE)

    @property
    def conversation(self) -> npt.NDArray[np.int16]:
        """`conversation.wav` as an (n, 2) int16 array: input left, heard right."""
        import numpy as np

        mix = self._wav(CONVERSATION_FILE)
        return mix if mix.ndim == 2 else np.zeros((0, 2), dtype=np.int16)

    def turns_frame(self) -> pd.DataFrame:
        """The turns as a pandas DataFrame (needs the `notebook` extra, for pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "turns_frame() needs pandas: pip install 'duplex-client[notebook]'"
            ) from None
        rows = [t.to_dict() for t in self.turns or []]
        columns = list(TURN_COLUMNS)
        return pd.DataFrame(rows, columns=columns)

    def plot(self, *, thumbnails: bool = False) -> Figure:
        """The run's tracks as a matplotlib Figure, from its bundle (needs the `report` extra)."""
        from duplex_client.report.bundle_reader import load_run_bundle
        from duplex_client.report.figure import require_matplotlib, run_figure

        if self.bundle_dir is None:
            raise ValueError("plot() needs the run's bundle, and this result has no bundle_dir")
        require_matplotlib()
        data = load_run_bundle(self.bundle_dir, thumbnails=thumbnails)
        return run_figure(data, thumbnails=thumbnails)

    def to_dict(self) -> dict[str, Any]:
        """The `result.json` document (no secrets: ids, counts, times and text only)."""
        return {
            "ok": self.ok,
            "ok_means": OK_MEANING,
            "status": self.status,
            "exit_code": self.exit_code,
            "error": self.error,
            "session_id": self.session_id,
            **({"session_ids": self.session_ids} if len(self.session_ids) > 1 else {}),
            **({"stream_end": self.stream_end} if self.stream_end is not None else {}),
            "model": self.model,
            "url": self.url,
            "dialect": self.dialect,
            "bundle_dir": str(self.bundle_dir) if self.bundle_dir else None,
            "started_at": self.started_at,
            "duration_s": round(self.duration_s, 3),
            "closed_reason": self.closed_reason,
            "server_errors": self.server_errors,
            "decisions": self.decisions,
            "counts": self.counts,
            "lateness_ms": self.lateness_ms,
            "timing_valid": self.timing_valid,
            "timing_reason": self.timing_reason,
            "transcript": self.transcript,
            **({"function_calls": self.function_calls} if self.function_calls else {}),
            **self._listening_dict(),
        }

    def _listening_dict(self) -> dict[str, Any]:
        if self.timing != "realtime":
            return {
                "timing": self.timing,
                "warnings": self.warnings,
                "omitted": ["turns", "metrics", HEARD_FILE, CONVERSATION_FILE],
                "omitted_reason": "no listener clock: the input was not paced in real time",
            }
        out: dict[str, Any] = {"timing": self.timing, "warnings": self.warnings}
        if self.latencies_ms:
            out["latencies_ms"] = self.latencies_ms
        out["turns"] = None if self.turns is None else [t.to_dict() for t in self.turns]
        out["metrics"] = self.metrics
        out["user_speech"] = self.user_speech
        if self.listening_error:
            out["listening_error"] = self.listening_error
        return out


#: The columns of `RunResult.turns_frame()`, in `result.json` order.
TURN_COLUMNS = (
    "response_id", "unit_index", "decided_ms", "first_audio_ms", "heard_start_ms",
    "heard_end_ms", "heard_ms", "received_ms", "cut", "user_end_ms", "user_end_source",
    "latency_ms", "server_ms", "transcript", "overlap_ms", "gap_ms", "kind", "function_call",
)  # fmt: skip


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
    result.session_ids = client.session_ids
    if client.stream_end is not None:
        result.stream_end = client.stream_end.to_dict()
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
    resumed = [r for r in client.reconnects if r.outcome not in (None, "failed")]
    result.counts = {
        **{k: totals[k] for k in keys},
        # handed to the session (`appends`), written to a socket, confirmed by the server
        "appends_written": totals["written"],
        "audio_ms_written": totals["written_audio_ms"],
        "appends_acknowledged": totals["acknowledged"],
        "responses": len(client.tracker.handles),
        "speak": sum(1 for h in handles if h.decision == "speak"),
        "listen": sum(1 for h in handles if h.decision == "listen"),
        "events": bundle.event_count,
        "output_audio_ms": bundle.output_ms,
        # a reconnection that failed is no reconnection: counted apart
        "reconnects": len(resumed),
        "reconnects_failed": len(client.reconnects) - len(resumed),
        "resent_appends": totals["resends"],
        "function_calls": len(client.function_call_records),
    }
    result.timeline = timeline.to_dict()
    return handles


def judge_timing(result: RunResult, timeline: InputTimeline, limit_ms: float) -> None:
    """Set `timing_valid` and `timing_reason` from the sends' lateness p99 and end drift."""
    from duplex_client.analysis.timing import timing_verdict

    if result.lateness_ms is None:  # not paced in real time, or nothing was sent
        return
    last = timeline.appends[-1] if timeline.appends else {}
    verdict = timing_verdict(result.lateness_ms.get("p99"), last.get("lateness_ms"), limit_ms)
    result.timing_valid, result.timing_reason = verdict.valid, verdict.reason


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


async def record_listening(
    result: RunResult,
    client: DuplexClientBase,
    timeline: InputTimeline,
    listening: RunListening,
    warn: Callable[[str], None],
) -> None:
    """Fill `timing`, `turns` and `metrics`, writing `heard.wav` and `conversation.wav`.

    Without a listener clock (asap pacing) nothing is measured and `timing` says why.
    """
    if not listening.clock.realtime or not listening.clock.started:
        result.timing = "realtime" if listening.clock.realtime else "not_realtime"
        listening.sent.discard()
        if listening.clock.realtime:
            result.turns, result.metrics = [], None
        return
    end_ms = timeline.appends[-1]["media_end_ms"] if timeline.appends else 0
    handles = session_handles(client)

    report = await listening.report(handles, timeline, end_ms, warn=warn)
    result.turns, result.metrics = report.turns, report.metrics
    result.user_speech = [{"start_ms": s.start_ms, "end_ms": s.end_ms} for s in report.user_speech]
