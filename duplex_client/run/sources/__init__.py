"""Where a run's input comes from: files, a recorded run, live devices, or a browser page.

A `Source` is one of the two things a way in brings to the one `SessionRun` (the other
being where answers play, which the source also says: a speaker for devices, the listener
model for files). It is opened before anything is written (so a bad file or a missing
device refuses with nothing on disk), sends its input once the session is open, and adds
what only it knows to the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from duplex_client.analysis.playback import HeardOutput
    from duplex_client.client.streaming import StreamResult
    from duplex_client.client.websocket import DuplexClient
    from duplex_client.framing.clock import MediaClock
    from duplex_client.framing.plan import PlannedAppend
    from duplex_client.framing.timeline import InputTimeline
    from duplex_client.run.listening import RunListening
    from duplex_client.run.options import InputKind, RunOptions
    from duplex_client.run.progress import RunProgress
    from duplex_client.run.result import RunResult


@dataclass(frozen=True, slots=True)
class SourceLink:
    """What a source sends through: the open session, its clock and timeline, the listener."""

    client: DuplexClient
    clock: MediaClock
    timeline: InputTimeline
    #: Call for every append sent (the listener's record, kept payloads, thumbnails).
    on_sent: Callable[[PlannedAppend], None]
    listening: RunListening
    progress: RunProgress


class Source(Protocol):
    """A run's input: opened before the run, sent once the session is open."""

    #: The kind of input (`RunOptions.validate` checks the options of this kind).
    inputs: InputKind
    #: Whether `ok` needs a listen/speak decision (an input that ends: a file, a recording).
    needs_decision: bool
    #: Server error codes that do not fail the run (request-local races of live input).
    benign_errors: frozenset[str]

    @property
    def media_ms(self) -> int:
        """How long the input lasts on the media clock, once opened (0: unknown, live)."""
        ...

    @property
    def input_facts(self) -> dict[str, Any] | None:
        """Where the input came from, for `session.json`'s `input` (None: the timeline says
        all there is, as for files and recordings)."""
        ...

    async def open(self, options: RunOptions, progress: RunProgress) -> None:
        """Open the input (off the loop where it blocks); refuse with a one-line error."""
        ...

    def output(self, options: RunOptions, clock: MediaClock, rate: int) -> HeardOutput | None:
        """Where answers play: a speaker, the listener model, or nothing (no listener)."""
        ...

    async def send(self, link: SourceLink) -> StreamResult | None:
        """Send the input; what was sent when the input ends by itself, None when the
        source ended the session's input itself (a live run quit)."""
        ...

    def complete(self, result: RunResult) -> None:
        """Add what only this source knows to the result (counts, latencies)."""
        ...

    async def close(self) -> None:
        """Release what `open` took (always called once the run is over)."""
        ...


__all__ = ["Source", "SourceLink"]
