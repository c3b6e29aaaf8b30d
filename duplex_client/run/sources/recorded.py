"""A recorded input sent again (`replay`): its sender decides how, heard like a file run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from duplex_client.analysis.playback import HeardOutput
from duplex_client.analysis.virtual_player import VirtualPlayer
from duplex_client.client.streaming import StreamResult
from duplex_client.framing.clock import MediaClock
from duplex_client.run.options import InputKind, RunOptions
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult
from duplex_client.run.sources import SourceLink

#: Sends a recorded input through the link (`replay` makes one from a bundle).
Sender = Callable[[SourceLink], Awaitable[StreamResult]]


class ReplaySource:
    """A recorded input, already read and checked; `sender` decides how it goes out."""

    inputs: InputKind = "given"
    needs_decision = True
    benign_errors: frozenset[str] = frozenset()
    input_facts = None

    def __init__(self, sender: Sender, media_ms: int) -> None:
        self.sender = sender
        self._media_ms = media_ms

    @property
    def media_ms(self) -> int:
        """The recording's length on the media clock."""
        return self._media_ms

    async def open(self, options: RunOptions, progress: RunProgress) -> None:
        """Nothing to open: the recording was read when it was checked."""

    def output(self, options: RunOptions, clock: MediaClock, rate: int) -> HeardOutput | None:
        """The listener model on the media clock, as for a file run."""
        return VirtualPlayer(clock, rate) if options.realtime else None

    async def send(self, link: SourceLink) -> StreamResult:
        """Send the recording (a different unit grid may refuse it before anything goes out)."""
        return await self.sender(link)

    def complete(self, result: RunResult) -> None:
        """Nothing to add."""

    async def close(self) -> None:
        """Nothing to release."""
