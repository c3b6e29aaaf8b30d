"""Admission by measured cost: start an item only while the client's CPU can pace it.

Each item costs the client some CPU per stream-second (planning its media, sending it,
hearing the answers: `eval.cost` predicts it). The eval starts another item only while the
predicted load, the sum of the running items' costs, stays within a budget of this process's
cores (`cpu_budget`, 80 % by default); `concurrency` stays the upper bound. Predictions are
refined as the eval runs: the CPU this process really spent over the stream time its items
covered, against what their costs predicted, scales every later prediction.

Pure arithmetic: no asyncio, no sleeping; the clock and the CPU clock are injected.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from duplex_client.usage import UsageError

#: The default share of the client's cores the running items' predicted load may take.
DEFAULT_CPU_BUDGET = 0.8
#: Predicted CPU (s) the eval must have covered before measurement refines the predictions.
REFINE_AFTER_CPU_S = 2.0
#: How far measurement may scale the predictions (a stall or a burst says little). Little
#: downwards: a client starved of CPU by other work spends less than predicted per wall
#: second because its streams fall behind, which is no reason to take on more.
FACTOR_RANGE = (0.8, 4.0)
#: When a running item loses its timing, the load it happened at times this is the most the
#: eval takes on from then.
LOST_BACKOFF = 0.9
#: Weight of a new reading of the other processes' CPU (an exponential average).
OTHERS_WEIGHT = 0.5


@dataclass(slots=True)
class _Admitted:
    cost_ms_per_s: float
    media_s: float
    started_at: float

    def cpu_s(self, at: float) -> float:
        """CPU seconds its cost predicts for the stream time it covered by `at`."""
        covered = min(max(0.0, at - self.started_at), self.media_s)
        return self.cost_ms_per_s * covered / 1000.0


@dataclass(frozen=True, slots=True)
class Cap:
    """The budget held the eval at `running` items, each predicted to cost this much."""

    running: int
    cost_ms_per_s: float


@dataclass(slots=True)
class CpuBudget:
    """Which item may start now, given what the running ones are predicted to cost."""

    cores: int
    share: float = DEFAULT_CPU_BUDGET
    #: The most items at once whatever the budget says (`concurrency` × endpoints).
    bound: int = 1
    clock: Callable[[], float] = time.monotonic
    cpu_clock: Callable[[], float] = time.process_time
    #: Measured CPU over predicted CPU so far (1 until enough was measured).
    factor: float = 1.0
    max_running: int = 0
    cap: Cap | None = None
    #: Items that cost more than the whole budget by themselves (run alone).
    alone: int = 0
    #: Cores the machine's other processes keep busy (the embedded server's included).
    others_cores: float = 0.0
    #: The most load taken on since an item lost its timing (None: none lost): the load of
    #: then times `LOST_BACKOFF`, raised by each item that ends on time after it.
    ceiling_ms_per_s: float | None = None
    #: The load (ms per s) the last item that lost its timing lost it at.
    lost_at_ms_per_s: float | None = None
    _running: dict[str, _Admitted] = field(default_factory=dict)
    _done_cpu_s: float = 0.0
    _cpu0: float | None = None
    _excluded_s: float = 0.0

    @property
    def limit_ms_per_s(self) -> float:
        """CPU ms per wall second the running items may take together: the share of the cores
        other processes leave free, and never more than a load that lost an item's timing."""
        free = max(0.0, self.cores - self.others_cores)
        limit = free * self.share * 1000.0
        return limit if self.ceiling_ms_per_s is None else min(limit, self.ceiling_ms_per_s)

    def observe_others(self, cores: float) -> None:
        """A reading of how many cores the machine's other processes kept busy lately."""
        self.others_cores += OTHERS_WEIGHT * (max(0.0, cores) - self.others_cores)

    def lost(self) -> None:
        """A running item's sends fell behind: take on no more than this load from now."""
        if not self._running:
            return
        self.lost_at_ms_per_s = self.load_ms_per_s()
        ceiling = self.lost_at_ms_per_s * LOST_BACKOFF
        if self.ceiling_ms_per_s is None or ceiling < self.ceiling_ms_per_s:
            self.ceiling_ms_per_s = ceiling

    def kept(self, cost_ms_per_s: float) -> None:
        """An item of this cost ended on time: the ceiling rises by it (a stall that cost one
        item its timing does not hold the eval down for good)."""
        if self.ceiling_ms_per_s is not None:
            self.ceiling_ms_per_s += cost_ms_per_s * self.factor

    @property
    def running(self) -> int:
        """Items started and not finished."""
        return len(self._running)

    def load_ms_per_s(self) -> float:
        """The running items' predicted load (refined), CPU ms per wall second."""
        return sum(a.cost_ms_per_s for a in self._running.values()) * self.factor

    def fits(self, cost_ms_per_s: float) -> bool:
        """Whether an item of this cost may start now (always when nothing runs: an item
        dearer than the whole budget runs alone, never never)."""
        if not self._running:
            return True
        return self.load_ms_per_s() + cost_ms_per_s * self.factor <= self.limit_ms_per_s

    def held(self, cost_ms_per_s: float) -> None:
        """An item that would otherwise start waits for the budget: note the cap."""
        running = len(self._running)
        if self.cap is None or running >= self.cap.running:
            self.cap = Cap(running, round(cost_ms_per_s * self.factor, 1))

    def start(self, key: str, cost_ms_per_s: float, media_s: float) -> None:
        """An item starts now, predicted to cost `cost_ms_per_s` over `media_s` of stream."""
        if self._cpu0 is None:
            self._cpu0 = self.cpu_clock()
        if cost_ms_per_s * self.factor > self.limit_ms_per_s:
            self.alone += 1
        self._running[key] = _Admitted(cost_ms_per_s, media_s, self.clock())
        self.max_running = max(self.max_running, len(self._running))

    def finish(self, key: str) -> None:
        """An item ended (done, failed or put back): its cost leaves the load; refine."""
        admitted = self._running.pop(key, None)
        if admitted is not None:
            self._done_cpu_s += admitted.cpu_s(self.clock())
        self.refine()

    def exclude(self, cpu_s: float) -> None:
        """CPU this process spent on something else (measuring costs), left out of refining."""
        self._excluded_s += cpu_s

    def predicted_cpu_s(self, now: float | None = None) -> float:
        """CPU seconds the items' raw costs predict for the stream time covered so far."""
        at = self.clock() if now is None else now
        return self._done_cpu_s + sum(a.cpu_s(at) for a in self._running.values())

    def refine(self) -> None:
        """Scale the predictions by measured over predicted CPU, once enough is covered."""
        if self._cpu0 is None:
            return
        predicted = self.predicted_cpu_s()
        if predicted < REFINE_AFTER_CPU_S:
            return
        measured = self.cpu_clock() - self._cpu0 - self._excluded_s
        low, high = FACTOR_RANGE
        self.factor = min(high, max(low, measured / predicted))

    def message(self) -> str | None:
        """Why fewer items ran at once than allowed ("capped at 9 by planning cost: ...")."""
        if self.cap is None:
            return None
        busy = f", {self.others_cores:.1f} busy elsewhere" if self.others_cores >= 0.1 else ""
        lost = ""
        if self.lost_at_ms_per_s is not None:
            lost = f"; timing was lost at {self.lost_at_ms_per_s:.0f} ms per second"
        return (
            f"capped at {self.cap.running} by planning cost: {self.cap.cost_ms_per_s:.0f} ms "
            f"per stream-second (budget {self.share:.0%} of {self.cores} cores{busy}{lost})"
        )

    def record(self) -> dict[str, Any]:
        """The summary's `admission` block."""
        return {
            "cores": self.cores,
            "cpu_budget": self.share,
            "bound": self.bound,
            "max_running": self.max_running,
            "capped_at": None if self.cap is None else self.cap.running,
            "cost_ms_per_s": None if self.cap is None else self.cap.cost_ms_per_s,
            "factor": round(self.factor, 3),
            "others_cores": round(self.others_cores, 2),
            "lost_at_ms_per_s": None
            if self.lost_at_ms_per_s is None
            else round(self.lost_at_ms_per_s, 1),
            "ran_alone": self.alone,
            "message": self.message(),
        }


def client_cores() -> int:
    """The cores this process may run on (its affinity), at least 1."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def check_share(value: Any) -> None:
    """`cpu_budget` is None or a share of the cores in (0, 1]; else a one-line `UsageError`."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise UsageError(
            f"cpu_budget must be a share of the cores in (0, 1], got {value!r}",
            param="cpu_budget",
        )
