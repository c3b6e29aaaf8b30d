"""Reconnect and resume (protocol.md §6.1): backoff policy, attempts and their reports.

The policy is sans-I/O; `resume_attempts` does the I/O through injected `connect` and
`sleep`, so backoff and fatal-code handling are tested without waiting.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from duplex_client.client.transport import Transport, TransportClosed
from duplex_client.protocol import client_events as ce
from duplex_client.protocol import server_events as se
from duplex_client.protocol.codec import CodecError, dumps, loads
from duplex_client.protocol.errors import FATAL_RESUME_CODES, DuplexConnectionError
from duplex_client.protocol.events import parse_server_event
from duplex_client.protocol.session.outbox import InputKind

log = logging.getLogger("duplex_client")

Outcome = Literal["resumed", "resync_required", "new_session", "failed"]


@dataclass(frozen=True, slots=True)
class ReconnectPolicy:
    """How a dropped socket is reconnected: jittered exponential backoff, then `session.resume`.

    The delay before attempt `a` (from 1) is uniform in `[min_delay_s, min(max_delay_s,
    base_delay_s * 2**a)]`. `uniform` and `sleep` are injectable for tests.
    """

    attempts: int = 5
    base_delay_s: float = 0.25
    min_delay_s: float = 0.25
    max_delay_s: float = 4.0
    #: Wait for `session.resumed` (or an error) after sending `session.resume`.
    resume_timeout_s: float = 10.0
    #: Unsent input (appends and commits queued while disconnected) held before senders wait.
    max_queued_bytes: int = 64 * 1024 * 1024
    #: A resume into a journal gap (`session.resync_required`) opens a new session in place of
    #: the lost one (False: the session ends, reason `resync_required: journal_gap`).
    new_session_on_resync: bool = False
    uniform: Callable[[float, float], float] = field(
        default=random.uniform, compare=False, repr=False
    )
    sleep: Callable[[float], Awaitable[None]] = field(
        default=asyncio.sleep, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {self.attempts}")
        if not 0 <= self.min_delay_s <= self.max_delay_s:
            raise ValueError("delays must satisfy 0 <= min_delay_s <= max_delay_s")
        if self.resume_timeout_s <= 0:
            raise ValueError("resume_timeout_s must be positive")

    def delay_bounds(self, attempt: int) -> tuple[float, float]:
        """The interval the delay before `attempt` (from 1) is drawn from."""
        high = min(self.max_delay_s, self.base_delay_s * 2.0**attempt)
        return self.min_delay_s, max(self.min_delay_s, high)

    def delay(self, attempt: int) -> float:
        """A jittered delay before `attempt`."""
        low, high = self.delay_bounds(attempt)
        return self.uniform(low, high)


# --- reports ---


@dataclass(frozen=True, slots=True)
class Delivery:
    """An input event written after a resume: a resend, or first sent late (queued)."""

    event_id: str
    kind: InputKind
    sent_at: float
    resend: bool


@dataclass(slots=True)
class ReconnectReport:
    """One reconnection: when it started and ended (client clock), attempts, outcome."""

    index: int
    started_at: float
    cause: str
    ended_at: float | None = None
    attempts: int = 0
    outcome: Outcome | None = None
    error: str | None = None
    deliveries: list[Delivery] = field(default_factory=list)
    #: Input written before the drop that could not be placed against the server's view.
    unresolved: int = 0
    #: The lost session and its replacement, when a journal gap started a new session.
    previous_session_id: str | None = None
    new_session_id: str | None = None

    @property
    def resent_appends(self) -> int:
        """Appends written again after the resume (their first copy may have been lost)."""
        return sum(1 for d in self.deliveries if d.resend and d.kind == "append")

    @property
    def late_appends(self) -> int:
        """Appends queued while disconnected and first sent after the resume."""
        return sum(1 for d in self.deliveries if not d.resend and d.kind == "append")

    def describe(self) -> str:
        """One line for logs and run summaries."""
        if self.outcome == "failed":
            return f"reconnect failed after {self.attempts} attempt(s): {self.error}"
        if self.outcome == "new_session":
            return (
                f"session {self.previous_session_id} lost to a journal gap after "
                f"{self.attempts} attempt(s); continued in new session {self.new_session_id} "
                f"({self.unresolved} input event(s) lost)"
            )
        return (
            f"{self.outcome} after {self.attempts} attempt(s); {self.resent_appends} append(s) "
            f"resent, {self.late_appends} sent late"
        )


ReconnectListener = Callable[[ReconnectReport], None]


# --- attempts ---


class ResumeFailed(Exception):
    """Reconnection gave up; `code` is the fatal resume code when that was the reason."""

    def __init__(self, message: str, attempts: int, code: str | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.code = code


@dataclass(frozen=True, slots=True)
class Resumed:
    """A successful attempt: the new transport and its `session.resumed`."""

    transport: Transport
    event: se.SessionResumed
    attempt: int


class ResyncRequired(ResumeFailed):
    """The server cannot replay what this client missed (a journal gap): the session is lost.

    vLLM-Omni 0.30.0 answers such a `session.resume` with `session.resync_required` and ends
    the socket without attaching: the client must start a new session.
    """

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(
            f"resync_required: {reason} (the server no longer holds the events this client "
            "missed; the session cannot be resumed)",
            attempts,
            f"resync_required:{reason}",
        )
        self.reason = reason


class _ResumeRefused(Exception):
    def __init__(self, event: se.ErrorEvent) -> None:
        super().__init__(f"{event.code}: {event.error.message}")
        self.code = event.code


class _Resync(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def _next_event(transport: Transport) -> se.ServerEvent:
    """The next server event the socket brings (binary and unreadable frames skipped)."""
    while True:
        data = await transport.recv()
        if not isinstance(data, str):
            continue
        try:
            return parse_server_event(loads(data))
        except CodecError:
            continue


async def _first_reply(transport: Transport) -> se.SessionResumed:
    while True:
        event = await _next_event(transport)
        if isinstance(event, se.SessionResumed):
            return event
        if isinstance(event, se.ErrorEvent):
            raise _ResumeRefused(event)
        if isinstance(event, se.SessionResyncRequired):
            raise _Resync(event.reason or "journal_gap")
        log.warning("ignoring %s received before session.resumed", event.type)


async def _created(transport: Transport) -> se.SessionCreated:
    while True:
        event = await _next_event(transport)
        if isinstance(event, se.SessionCreated):
            return event
        if isinstance(event, se.ErrorEvent):
            raise _ResumeRefused(event)


#: Refusals of a new session that a later try may not get: the lost session still holds its
#: admission slot until its disconnect grace ends (upstream counts detached sessions).
_FULL = frozenset({"resource_exhausted", "duplex_session_busy"})


async def open_new_session(
    policy: ReconnectPolicy, connect: Callable[[], Awaitable[Transport]], update: bytes
) -> tuple[Transport, se.SessionCreated]:
    """A replacement session on a new socket: `session.update`, then its `session.created`.

    A full server (`resource_exhausted`: the lost session may still hold its slot) or a
    failed connection is tried again with the policy's backoff, up to `policy.attempts`
    times; `ResumeFailed` when it cannot be opened.
    """
    last = "no attempt made"
    for attempt in range(1, policy.attempts + 1):
        if attempt > 1:
            await policy.sleep(policy.delay(attempt))
        try:
            transport = await connect()
        except DuplexConnectionError as exc:
            last = str(exc)
            continue
        try:
            await transport.send(update)
            return transport, await asyncio.wait_for(_created(transport), policy.resume_timeout_s)
        except _ResumeRefused as exc:
            await transport.close()
            if exc.code not in _FULL:
                raise ResumeFailed(f"new session refused ({exc})", attempt, exc.code) from None
            last = f"new session refused ({exc})"
        except (TimeoutError, TransportClosed) as exc:
            await transport.close()
            last = f"no session.created ({exc or 'timeout'})"
        except BaseException:
            await transport.close()
            raise
    raise ResumeFailed(f"new session: gave up after {policy.attempts} try(s): {last}", 0)


async def resume_attempts(
    policy: ReconnectPolicy,
    connect: Callable[[], Awaitable[Transport]],
    resume_event: Callable[[], ce.SessionResume],
) -> Resumed:
    """Try up to `policy.attempts` times; `ResumeFailed` on a fatal code or when out of tries."""
    last = "no attempt made"
    for attempt in range(1, policy.attempts + 1):
        await policy.sleep(policy.delay(attempt))
        try:
            transport = await connect()
        except DuplexConnectionError as exc:
            last = str(exc)
            log.info("reconnect attempt %d: %s", attempt, last)
            continue
        try:
            await transport.send(dumps(resume_event().to_dict()))
            event = await asyncio.wait_for(_first_reply(transport), policy.resume_timeout_s)
        except _ResumeRefused as exc:
            await transport.close()
            if exc.code in FATAL_RESUME_CODES:
                raise ResumeFailed(f"resume refused ({exc})", attempt, exc.code) from None
            last = f"resume refused ({exc})"
            continue
        except _Resync as exc:
            await transport.close()
            raise ResyncRequired(exc.reason, attempt) from None
        except TimeoutError:
            await transport.close()
            last = f"no session.resumed within {policy.resume_timeout_s:g} s"
            continue
        except TransportClosed as exc:
            await transport.close()
            last = f"connection closed while resuming ({exc})"
            continue
        except BaseException:
            await transport.close()
            raise
        log.info("resumed on attempt %d", attempt)
        return Resumed(transport, event, attempt)
    raise ResumeFailed(f"gave up after {policy.attempts} attempt(s): {last}", policy.attempts)
