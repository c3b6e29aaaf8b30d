"""Which dialect an endpoint speaks, from what its wire shows (sans-I/O; docs/dialects.md).

Two facts decide, never a guess from silence:

- the URL path: GPT-Live lives at `/v1/live/sessions` (no other dialect uses it);
- the first frame the endpoint sends on a fresh connection that got `PROBE_FRAME` (`[]`,
  not an event): an OpenAI Realtime endpoint speaks first, a `session.created` with a
  `realtime` session and no capabilities; a duplex endpoint (`autostart=0`) opens no
  session and refuses the frame at once with its own handshake error (`bad_event`); an
  endpoint that does not speak first and refuses it with GA's `invalid_event` is GPT-Live's
  wire on another path (the duplex wire has no such code).

Anything else (no answer in time, a closed socket, another frame) detects nothing: the run
takes `duplex`, and the duplex handshake refuses another wire with a hint (`dialect_hint`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from duplex_client.protocol.dialects.gpt_live import LIVE_PATH

__all__ = ["AUTO", "PROBE_FRAME", "Detected", "from_first_frame", "from_path"]

#: `--dialect auto`: detect the endpoint's dialect (the default of a run).
AUTO: Final = "auto"
#: What the probe sends first: a JSON value that is no event, refused without opening anything.
PROBE_FRAME: Final = b"[]"


@dataclass(frozen=True, slots=True)
class Detected:
    """A dialect the wire showed, and how (one phrase for the run's progress)."""

    dialect: str
    how: str


def from_path(url: str) -> Detected | None:
    """GPT-Live by its path (`/v1/live/sessions`), else None (the path says nothing)."""
    if urlsplit(url).path.rstrip("/") == LIVE_PATH:
        return Detected("gpt-live", f"the URL's path is GPT-Live's {LIVE_PATH}")
    return None


def from_first_frame(event: Any) -> Detected | None:
    """The dialect the endpoint's first frame after the probe shows, else None."""
    if not isinstance(event, dict):
        return None
    kind = event.get("type")
    if kind == "session.created":
        session = event.get("session")
        if isinstance(session, dict) and "capabilities" in session:
            return Detected("duplex", "its session.created carries duplex capabilities")
        if isinstance(session, dict) and session.get("type") == "realtime":
            return Detected("openai", "it spoke first with an OpenAI Realtime session.created")
        return None
    if kind != "error":
        return None
    error = event.get("error")
    code = error.get("code") if isinstance(error, dict) else event.get("code")
    if code == "invalid_event":
        return Detected("gpt-live", "it waits for the client and refuses with GA's invalid_event")
    if isinstance(code, str) and code:
        return Detected("duplex", f"it refused the probe with the duplex handshake error {code}")
    return None
