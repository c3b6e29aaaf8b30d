"""`-v` protocol lines from a run's progress: connection, handshake, commits, decisions.

The SDK logs reconnects itself (logger `duplex_client`); the rest of a session's protocol
activity is logged here as the run updates its progress object: a subclass of the SDK's
progress whose attribute writes log what changed (no polling, so no phase is missed).
"""

from __future__ import annotations

import logging
from typing import Any

from duplex_client.client.transport import redact_url
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult

log = logging.getLogger("duplex_cli.protocol")

#: What a phase change means on the wire.
PHASE_LINES = {
    "streaming": "handshake complete: session.created received, streaming input",
    "live": "handshake complete: session.created received, live",
    "finishing": "input committed: waiting for the decision and the answer",
    "draining": "session.close sent: waiting for the stream to drain",
    "closing": "closing the session",
}


class _Logged:
    """Mixin: INFO lines for phase, decisions and commits as they are written."""

    url: str | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        old = getattr(self, name, None)
        super().__setattr__(name, value)
        if old == value or not log.isEnabledFor(logging.INFO):
            return
        if name == "phase":
            if value == "connecting":
                where = redact_url(self.url) if self.url else "the embedded reference server"
                log.info("connecting to %s", where)  # never a key from the URL
            elif value in PHASE_LINES:
                log.info(PHASE_LINES[value])
        elif name == "decisions" and isinstance(value, list):
            for unit, decision in value[len(old or []) :]:
                log.info("decision: unit %s %s", "?" if unit is None else unit, decision)
        elif name == "commits" and isinstance(value, int) and value > (old or 0):
            log.info("commit %d sent (input_audio_buffer.commit)", value)
        elif name == "decision" and value != "-":
            log.info("decision: %s", value)


class LoggedRunProgress(_Logged, RunProgress):
    """A `RunProgress` that logs protocol activity at INFO (`stream -v`, `live -v`)."""


def log_result(result: RunResult) -> None:
    """The session's end in one INFO line: id, commits, responses and decisions."""
    c = result.counts or {}
    log.info(
        "session %s ended (%s): %s appends, %s commit(s), %s response(s), %s speak / %s listen",
        result.session_id,
        result.status,
        c.get("appends", 0),
        c.get("commits", 0),
        c.get("responses", 0),
        c.get("speak", 0),
        c.get("listen", 0),
    )
