"""One browser session: `run_session` with the page as its source, and what the page sees.

A session is the run layer's one run (`run.session_run.run_session`) with a `BrowserSource`:
the options are the launch's, with the page's turn mode and a new bundle directory (payloads
kept, so `duplex-cli replay` can send the input again). While it runs, the page gets its
state ten times a second (phase, level, transcript, latency, lateness, the event log); at
the end the result (turns and metrics as `result.json` has them) and the report's link.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from duplex_client.bundle.layout import BundleLayout
from duplex_client.protocol import response_events as r
from duplex_client.protocol import server_events as se
from duplex_client.protocol.capabilities import UnitKind
from duplex_client.protocol.errors import DuplexClientError
from duplex_client.run.controls import LiveControls
from duplex_client.run.options import VIDEO_DIALECTS, RunOptions
from duplex_client.run.prepare import prepare
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult
from duplex_client.run.session_run import run_session
from duplex_client.run.turns import TurnMode
from duplex_client.web.protocol import ECHO_SETTINGS, StartRequest
from duplex_client.web.source import BrowserSource, offered_modes, offers_video

if TYPE_CHECKING:
    from duplex_client.web.page import PageConnection
    from duplex_client.web.server import WebApp

log = logging.getLogger("duplex_client.web")
#: How often the page gets the session's state.
PUSH_S = 0.1
#: Event log lines kept for the page (it keeps its own scrollback).
LOG_LINES = 200


def offered(app: WebApp) -> tuple[TurnMode, ...]:
    """The turn modes the page may start (the launch's preset decides)."""
    return offered_modes(app.config.options.preset)


def session_rates(options: RunOptions, mode: TurnMode) -> dict[str, int]:
    """The input and output sample rates a session in `mode` runs at (its config's).

    The page captures at the input rate and plays at the output rate: the browser resamples
    (this process then sends its blocks as they come, with no resampler's delay).
    """
    try:
        config = prepare(replace(options, turn=mode), inputs="browser").config
    except DuplexClientError:  # a file the launch checked changed since: the defaults
        from duplex_client.client.config import SessionConfig

        config = SessionConfig()
    return {"input": config.input_sample_rate_hz, "output": config.output_sample_rate_hz}


def ready_message(app: WebApp) -> dict[str, Any]:
    """What the page learns when it connects: modes and their rates, camera, player, echo."""
    o = app.config.options
    modes = offered(app)
    preferred = o.turn if o.turn in modes else modes[0]
    return {
        "type": "ready",
        "modes": list(modes),
        "rates": {mode: session_rates(o, mode) for mode in modes},
        "mode": preferred,
        # an audio-only dialect named: no camera offered (`auto` is known once detected)
        "video": offers_video(o.preset) and o.dialect in VIDEO_DIALECTS,
        "preset": o.preset,
        "jitter_ms": o.jitter_ms,
        "muted": o.start_muted,
        "camera_off": o.camera_off,
        "echo": dict.fromkeys(ECHO_SETTINGS, True),
        "report": True,
    }


class PageSession:
    """One run from the page (see the module docstring)."""

    def __init__(self, page: PageConnection, number: int, request: StartRequest) -> None:
        app = page.app
        self.page = page
        self.app = app
        self.number = number
        self.request = request
        self.options = replace(
            app.config.options,
            turn=request.mode,
            output_dir=app.next_bundle_dir(),
            keep_payloads=True,
        )
        self.controls = LiveControls(
            muted=self.options.start_muted, camera_on=not self.options.camera_off
        )
        self.progress = RunProgress(figures=True)
        self.source = BrowserSource(
            page.post, page.clock, request, self.controls, on_open=self._opened
        )
        self.result: RunResult | None = None
        self._log: deque[dict[str, Any]] = deque(maxlen=LOG_LINES)
        self._logged = 0
        self._warned = 0
        self._state = ""

    async def run(self) -> None:
        """Run the session; the page and the terminal hear how it went."""
        o = self.options
        preset = o.preset_name()
        self._set_state("connecting", f"{preset}, {_mode_words(o.turn)}")
        pusher = asyncio.create_task(self._push(), name="duplex-web-progress")
        error: str | None = None
        try:
            url, progress = self.app.config.url, self.progress
            self.result = await run_session(url, o, self.source, progress=progress)
        except (DuplexClientError, OSError) as exc:  # refused before or as the session opened
            error = str(exc)
        except Exception as exc:  # a bug: said, never a silent page
            log.exception("browser session %d failed", self.number)
            error = f"{type(exc).__name__}: {exc}"
        finally:
            pusher.cancel()
            await asyncio.gather(pusher, return_exceptions=True)
            self._push_once()
        self._finish(error)

    # --- the end ---

    def _finish(self, error: str | None) -> None:
        result, bundle = self.result, self.options.output_dir
        if result is not None:
            error = None if result.ok else (result.error or result.status)
        has_bundle = bundle is not None and BundleLayout(bundle).result.exists()
        if has_bundle and bundle is not None:
            self.app.bundles[self.number] = bundle
        doc: dict[str, Any] = {
            "type": "stopped",
            "ok": error is None,
            "error": error,
            "bundle": str(bundle) if has_bundle else None,
            "report": self.app.report_path(self.number) if has_bundle else None,
            "result": _summary(result) if result is not None else None,
        }
        self.page.post(doc)
        self._set_state("error" if error is not None else "stopped", error)
        if has_bundle:
            self.app.say(f"bundle: {bundle}")

    def _set_state(self, state: str, detail: str | None = None) -> None:
        if state == self._state:
            return
        self._state = state
        self.page.post({"type": "state", "state": state, "message": detail})
        line = f"session {self.number}: {state}" + (f" ({detail})" if detail else "")
        self.app.say(line)

    # --- while it runs ---

    def _opened(self, source: BrowserSource) -> None:
        """The session is open: the page learns what it granted; the event log starts."""
        link = source.link
        assert link is not None
        client = link.client
        # a session that takes no commits has only the model's turns, whatever was offered
        modes = [m for m in offered(self.app) if client.takes_commits or m == "model"]
        caps = client.capabilities
        self.page.post(
            {
                "type": "session",
                "session_id": client.session_id,
                "model": client.model,
                "preset": self.options.preset_name(),
                "mode": self.options.turn,
                "modes": modes,
                "capabilities": caps.to_dict(),
                "unit_ms": caps.chunk_period_ms,
                "video": caps.allows(UnitKind.VISION) or caps.allows(UnitKind.OMNI),
                "input_rate": client.input_pcm_format.sample_rate_hz,
            }
        )
        client.add_listener(self._on_event)

    def _on_event(self, event: se.ServerEvent, received_at: float) -> None:
        if isinstance(event, r.ResponseAudioDelta | r.ResponseTextDelta):
            return  # one line per answer is enough: its created / done lines say it
        if isinstance(event, r.ResponseAudioTranscriptDelta):
            return
        clock = self.source.link.clock if self.source.link is not None else None
        media = clock.media_ms_at(received_at) if clock is not None and clock.started else None
        line: dict[str, Any] = {"type": event.type, "media_ms": _round(media)}
        rid = getattr(event, "response_id", None)
        if isinstance(rid, str):
            line["response_id"] = rid
        self._log.append(line)
        self._logged += 1

    async def _push(self) -> None:
        while True:
            self._push_once()
            await asyncio.sleep(PUSH_S)

    def _push_once(self) -> None:
        p = self.progress
        if p.phase == "live":
            self._set_state("live")
        new = min(self._logged, len(self._log))
        events = list(self._log)[len(self._log) - new :] if new else []
        self._logged = 0
        warnings = p.warnings[self._warned :]
        self._warned = len(p.warnings)
        for line in warnings:
            self.app.say(f"session {self.number}: warning: {line}")
        player = self.source.player
        self.page.post(
            {
                "type": "progress",
                "phase": p.phase,
                "media_ms": p.media_ms,
                "level_dbfs": round(p.mic_level_dbfs, 1),
                "muted": p.muted,
                "camera_on": p.camera_on,
                "talking": p.talking,
                "audible": p.audible,
                "decision": p.decision,
                "transcript": p.transcript_lines,
                "latency_ms": p.last_latency_ms,
                "lateness_p50_ms": _round(p.lateness_p50_ms),
                "lateness_max_ms": _round(p.lateness_max_ms),
                "appends": p.appends,
                "commits": p.commits,
                "units": dict(p.units),
                "frames_sent": p.frames_sent,
                "interruptions": p.interruptions,
                "underruns": 0 if player is None else player.underruns,
                "warnings": warnings,
                "events": events,
            }
        )


def _summary(result: RunResult) -> dict[str, Any]:
    """What the page shows of `result.json`: the same numbers, not recomputed."""
    doc = result.to_dict()
    keep = ("ok", "status", "error", "turns", "metrics", "counts", "lateness_ms", "warnings")
    return {k: doc.get(k) for k in keep} | {"exit_code": result.exit_code}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _mode_words(turn: str) -> str:
    return {"model": "model turns", "vad": "server VAD", "ptt": "push-to-talk"}.get(turn, turn)
