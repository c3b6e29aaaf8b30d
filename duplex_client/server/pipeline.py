"""The model's serial input pipeline: work items, each ready after its processing time."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from duplex_client.protocol.requests import ResponseOptions
from duplex_client.server.assembler import Unit
from duplex_client.server.conversation import Turn
from duplex_client.server.engine.base import Decision, Engine, Pending, TurnView, UnitView


@dataclass
class Work:
    """One item of the model's serial input pipeline (units, commits, response requests)."""

    ready_at: float
    kind: str
    unit: Unit | None = None
    decision: Decision | None = None
    #: The engine's decision while it waits for off-loop work; `override` then replaces it.
    pending: Pending | None = None
    override: Decision | None = None
    #: The client event this work answers (commits and response requests), its turn's item.
    event_id: str | None = None
    item_id: str | None = None
    options: ResponseOptions | None = None
    turn: Turn | None = None
    final: bool = True
    response_create: bool | None = None
    audio_end_ms: int = 0

    def set_decision(self, decision: Decision | Pending) -> None:
        """Take the engine's answer, final or pending."""
        if isinstance(decision, Pending):
            self.pending = decision
        else:
            self.decision = decision

    def apply_override(self) -> None:
        """Make an override final now when no pending decision must run first."""
        if self.override is not None and self.pending is None:
            self.decision, self.override = self.override, None

    @property
    def delay_ms(self) -> int:
        """The decision's scripted delay (none while pending)."""
        return self.decision.delay_ms if self.decision is not None else 0

    @property
    def ready(self) -> bool:
        """Whether nothing off-loop is still awaited."""
        return self.pending is None or self.pending.ready()

    @property
    def undecided_final_commit(self) -> bool:
        """Whether this is a final commit whose turn waits for a response request."""
        return (
            self.kind == "commit" and self.final and self.decision is None and self.pending is None
        )

    def settle(self) -> None:
        """Make the pending decision (in pipeline order), then apply the override."""
        if self.pending is not None:
            self.decision = self.pending.finish()
            self.pending = None
        if self.override is not None:
            self.decision, self.override = self.override, None


class Pipeline:
    """Work in arrival order; each item starts when the previous one's model time is over."""

    def __init__(self, now: float, on_job: Callable[[Future[Any]], None]) -> None:
        self._items: deque[Work] = deque()
        self._free_at = now
        self._on_job = on_job

    def enqueue(self, work: Work, processing_ms: int, now: float) -> None:
        """Queue work behind earlier items; it runs after `processing_ms` of model time."""
        if work.pending is not None and work.pending.job is not None:
            self._on_job(work.pending.job)
        start = max(now, self._free_at)
        work.ready_at = start + processing_ms / 1000.0
        self._free_at = work.ready_at
        self._items.append(work)

    def pop_due(self, now: float) -> Work | None:
        """The head item, settled, when its time has come and nothing off-loop is awaited."""
        if not self._items or self._items[0].ready_at > now or not self._items[0].ready:
            return None
        work = self._items.popleft()
        work.settle()
        return work

    def next_ready_at(self) -> float | None:
        """When the head item is due (None if empty or still awaiting off-loop work)."""
        if self._items and self._items[0].ready:
            return self._items[0].ready_at
        return None

    @property
    def idle(self) -> bool:
        """Whether no work is queued."""
        return not self._items

    def undecided_commits(self) -> int:
        """How many final commits in flight will retain their turn."""
        return sum(1 for w in self._items if w.undecided_final_commit)

    def clear(self) -> None:
        """Drop every queued item (the session ended)."""
        self._items.clear()


class Decisions:
    """The engine's decisions, commits and response requests each numbered in asking order."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._commits = 0
        self._response_creates = 0

    def unit(self, unit: UnitView) -> Decision | Pending:
        """The engine's decision on one unit."""
        return self._engine.decide_unit(unit)

    def commit(self, turn: TurnView) -> Decision | Pending:
        """The engine's decision on a committed turn (the next commit index)."""
        decision = self._engine.decide_commit(turn, self._commits)
        self._commits += 1
        return decision

    def response_create(self, turns: Sequence[TurnView]) -> Decision | Pending:
        """The engine's decision on a `response.create` (the next request index)."""
        decision = self._engine.decide_response_create(turns, self._response_creates)
        self._response_creates += 1
        return decision
