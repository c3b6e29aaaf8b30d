"""The endpoints an eval spreads items over: their health, backoff and who is down.

Pure state with an injectable clock. An endpoint fault (a refused or dropped connection, a
session the server would not open) suspends the endpoint for an exponential backoff; more
than `retries` faults in a row put it down for the rest of the eval. Items that were running
when an endpoint failed count as one fault: an outage is counted once, not per item. A
refusal at capacity is no fault: the endpoint's `limit` holds the extra items back.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from duplex_client.run.options import RunOptions

#: The first backoff after a fault; each further fault in a row doubles it, up to the cap.
BACKOFF_S = 1.0
BACKOFF_CAP_S = 30.0


@dataclass(slots=True)
class Endpoint:
    """One server: its URL as shown (redacted), its slot index and its health."""

    index: int
    url: str
    shown: str
    #: The model its items ask for (resolved once per endpoint; None: the options' own).
    model: str | None = None
    #: The wire it speaks when the eval names one per endpoint (None: the options' own).
    dialect: str | None = None
    faults: int = 0
    down: bool = False
    suspended_until: float = 0.0
    #: Bumped at every counted fault: attempts started before it belong to the same outage.
    epoch: int = 0
    last_error: str | None = None
    items: int = 0
    failed: int = 0
    running: int = 0
    #: Sessions it takes at once (None: as many as the eval's concurrency), from what the
    #: server said (`admission.session_limit`) or from its refusals at capacity.
    limit: int | None = None
    #: Refusals at capacity in a row with none of this eval's sessions on it.
    busy: int = 0

    def options(self, options: RunOptions) -> RunOptions:
        """`options` as this endpoint's items run them (its dialect, when it has its own)."""
        if self.dialect is None or self.dialect == options.dialect:
            return options
        return dataclasses.replace(options, dialect=self.dialect)

    @property
    def label(self) -> str:
        """`#<n> <url>`: how messages name the endpoint."""
        return f"#{self.index} {self.shown}"


@dataclass
class EndpointPool:
    """Every endpoint of an eval and the rule that suspends and retires them."""

    endpoints: Sequence[Endpoint]
    retries: int = 2
    backoff_s: float = BACKOFF_S
    clock: Callable[[], float] = time.monotonic
    log: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, urls: Sequence[tuple[str, str]], **kw: object) -> EndpointPool:
        """A pool over `(url, shown)` pairs, in order (the slot index is the position)."""
        endpoints = [Endpoint(i, url, shown) for i, (url, shown) in enumerate(urls)]
        return cls(endpoints, **kw)  # type: ignore[arg-type]

    @property
    def all_down(self) -> bool:
        """Whether no endpoint can take another item."""
        return all(e.down for e in self.endpoints)

    def wait_s(self, endpoint: Endpoint) -> float:
        """Seconds until `endpoint` may start another item (0: now)."""
        return max(0.0, endpoint.suspended_until - self.clock())

    def has_room(self, endpoint: Endpoint) -> bool:
        """Whether `endpoint` takes another session now (below its known limit)."""
        return endpoint.limit is None or endpoint.running < endpoint.limit

    def started(self, endpoint: Endpoint) -> int:
        """Note an item starting on `endpoint`; returns the epoch to report its end with."""
        endpoint.running += 1
        return endpoint.epoch

    def abandoned(self, endpoint: Endpoint) -> None:
        """An item stopped without an outcome (the eval was cancelled): neither way counted."""
        endpoint.running -= 1

    def succeeded(self, endpoint: Endpoint) -> None:
        """The endpoint served a session to its end (whatever the answer): its faults reset."""
        endpoint.running -= 1
        endpoint.items += 1
        endpoint.faults = endpoint.busy = 0

    def item_failed(self, endpoint: Endpoint) -> None:
        """The item failed for its own reasons (bad media, no decision): not a fault."""
        endpoint.running -= 1
        endpoint.items += 1
        endpoint.failed += 1

    def faulted(self, endpoint: Endpoint, epoch: int, error: str | None) -> None:
        """An attempt begun in `epoch` failed for the endpoint's reasons."""
        endpoint.running -= 1
        endpoint.last_error = error
        if endpoint.down or epoch != endpoint.epoch:
            return  # the same outage, already counted
        endpoint.faults += 1
        endpoint.epoch += 1
        if endpoint.faults > self.retries:
            endpoint.down = True
            self.log.append(f"endpoint {endpoint.label} is down after {endpoint.faults} faults")
            return
        wait = min(BACKOFF_CAP_S, self.backoff_s * 2 ** (endpoint.faults - 1))
        endpoint.suspended_until = self.clock() + wait
        self.log.append(f"endpoint {endpoint.label} failed ({error}); retrying in {wait:g} s")

    def refused(self, endpoint: Endpoint, error: str | None) -> None:
        """The endpoint refused a session at capacity (`resource_exhausted`): not a fault.

        With sessions of this eval on it, it takes that many at once: the other items wait
        for one of them to end. With none (other clients hold it), it is waited for as after
        a fault, and is down after more than `retries` such refusals in a row.
        """
        endpoint.running -= 1
        endpoint.last_error = error
        if endpoint.running > 0:
            if endpoint.limit is None or endpoint.running < endpoint.limit:
                endpoint.limit = endpoint.running
                self.log.append(
                    f"endpoint {endpoint.label} is at capacity with {endpoint.running} "
                    f"session(s) of this eval ({error}): the other items wait for one to end"
                )
            return
        endpoint.busy += 1
        if endpoint.busy > self.retries:
            endpoint.down = True
            self.log.append(
                f"endpoint {endpoint.label} is down: at capacity with none of this eval's "
                f"sessions, {endpoint.busy} times in a row ({error})"
            )
            return
        wait = min(BACKOFF_CAP_S, self.backoff_s * 2 ** (endpoint.busy - 1))
        endpoint.suspended_until = self.clock() + wait
        self.log.append(f"endpoint {endpoint.label} is busy ({error}); retrying in {wait:g} s")

    def down_reason(self) -> str:
        """One line: every endpoint with its last error."""
        parts = [f"{e.label}: {e.last_error or 'unreachable'}" for e in self.endpoints]
        return "; ".join(parts)
