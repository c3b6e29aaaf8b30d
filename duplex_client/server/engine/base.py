"""The engine interface: who decides listen/speak per unit or turn, and how answers sound."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

from duplex_client.protocol.capabilities import UnitKind


@dataclass(frozen=True, slots=True)
class Speak:
    """Open (or answer with) a response saying `text` (None: the engine composes one)."""

    text: str | None = None
    audio_ms: int | None = None
    delay_ms: int = 0
    #: What the engine heard the user say in the turn decided (None: it did not transcribe).
    transcript: str | None = None
    #: Text the model writes next to its speech, sent as an `output_text` part after the
    #: audio part (`content_index` 1) when the session asks for text (scripted only).
    shown: str | None = None


@dataclass(frozen=True, slots=True)
class Listen:
    """Keep listening; no response."""

    delay_ms: int = 0
    reason: str = "model_listen"
    #: What the engine heard the user say in the turn decided (None: it did not transcribe).
    transcript: str | None = None


@dataclass(frozen=True, slots=True)
class Fail:
    """Fail with an error code (session-fatal codes end the session)."""

    code: str
    message: str = "scripted failure"
    delay_ms: int = 0


@dataclass(frozen=True, slots=True)
class CallTool:
    """Call the function `name` with JSON `arguments` (a response of its own, protocol "Tools").

    `fallback` is the decision when the session cannot take the call (it does not declare
    `name`, `tool_choice` is `none`, or the profile has no tools); None calls it regardless
    (the scripted engine's way to test a client against undeclared calls). An empty `call_id`
    is allocated by the server; `malformed` passes the call on as `duplex.function_call.done`.
    """

    name: str
    arguments: str = "{}"
    call_id: str = ""
    fallback: Speak | Listen | None = None
    malformed: bool = False
    delay_ms: int = 0


Decision = Speak | Listen | Fail | CallTool


@dataclass(frozen=True, slots=True)
class ToolCallView:
    """What the engine sees of a finished call: its name, JSON arguments and the output."""

    name: str
    call_id: str
    arguments: str
    output: str
    index: int


@dataclass(frozen=True, slots=True)
class Pending:
    """A decision waiting for work done off the event loop (speech recognition in a worker).

    The session holds its pipeline at this item until `ready()`, then calls `finish()` once,
    in input order, which makes the decision (an engine's state changes stay in order).
    """

    job: Future[Any] | None
    finish: Callable[[], Decision]

    def ready(self) -> bool:
        """Whether `finish` can run without waiting."""
        return self.job is None or self.job.done()


@dataclass(frozen=True, slots=True)
class UnitView:
    """What the engine sees of one emitted unit."""

    unit_index: int
    kind: UnitKind
    audio_unit_index: int | None
    speech: bool
    duration_ms: int
    frames: int
    #: The unit's PCM (padding included), its rate and sample width, and its base64 images.
    #: In a turn's view only the turn's latest frame-bearing unit that the engine decided on
    #: as it arrived still shows its images (`frames` counts them all).
    pcm: bytes = field(default=b"", repr=False)
    sample_rate_hz: int = 16000
    bytes_per_sample: int = 2
    images: tuple[str, ...] = field(default=(), repr=False)


@dataclass(frozen=True, slots=True)
class TurnView:
    """What the engine sees of one committed turn (or of the open turn for `response.create`)."""

    turn_id: int
    units: tuple[UnitView, ...]
    speech: bool
    audio_ms: int

    @property
    def frames(self) -> int:
        """Images across the turn's units."""
        return sum(u.frames for u in self.units)


@dataclass(frozen=True, slots=True)
class AudioChunk:
    """One output delta: PCM16 bytes and the transcript piece spoken in it."""

    pcm: bytes
    text: str


class Engine(Protocol):
    """Decides and renders answers; must be deterministic for a given script and input."""

    def decide_unit(self, unit: UnitView) -> Decision | Pending:
        """The model's decision after hearing/seeing one unit (auto-response lane)."""
        ...

    def decide_commit(self, turn: TurnView, index: int) -> Decision | Pending:
        """The decision at the end of the `index`-th final commit that asks for a response."""
        ...

    def decide_response_create(self, turns: Sequence[TurnView], index: int) -> Decision | Pending:
        """The decision for the `index`-th `response.create`, answering from `turns`."""
        ...

    def compose(self, turns: Sequence[TurnView], unit: UnitView | None) -> str:
        """A default answer text for a Speak decision without text."""
        ...

    def answer_function_output(self, call: ToolCallView) -> Speak | Listen:
        """The follow-up after the client answered the `call.index`-th call of the session."""
        ...

    def render(self, text: str, sample_rate_hz: int, audio_ms: int | None) -> list[AudioChunk]:
        """The answer as output chunks (about 1 s of PCM16 each) with transcript pieces."""
        ...

    @property
    def chunk_interval_ms(self) -> int:
        """Wall-clock gap between output chunks (0: as fast as possible)."""
        ...

    @property
    def unit_listen_events(self) -> bool:
        """Whether each listened-to unit gets a standalone `response.listen`."""
        ...
