"""A session's life: open, detached, closed; its activity clock and its resume credentials."""

from __future__ import annotations

from enum import Enum

from duplex_client.server import ids


class SessionState(Enum):
    """Where a session is in its life."""

    #: A socket is attached; client events are processed.
    OPEN = "open"
    #: The socket dropped; the session runs on for the disconnect grace, awaiting a resume.
    DETACHED = "detached"
    #: Closed or expired; nothing more happens.
    CLOSED = "closed"

    @property
    def running(self) -> bool:
        """Whether timers and the pipeline still run (open or detached)."""
        return self is not SessionState.CLOSED

    @property
    def wire(self) -> str:
        """The `session.state` the wire shows (a detached session is still open there)."""
        return "closed" if self is SessionState.CLOSED else "open"


class Lifecycle:
    """The state, when the session was last active or detached, and its resume token."""

    def __init__(self, *, resumable: bool, now: float) -> None:
        self._state = SessionState.OPEN
        self._close_reason: str | None = None
        self._opened_at = now
        self._last_activity = now
        self._detached_at: float | None = None
        self._resume_token: str | None = ids.resume_token() if resumable else None
        self._previous_token: str | None = None
        self._generation = 1

    @property
    def state(self) -> SessionState:
        """Open, detached (awaiting a resume) or closed."""
        return self._state

    @property
    def opened_at(self) -> float:
        """When the session was created."""
        return self._opened_at

    @property
    def close_reason(self) -> str | None:
        """Why the session ended (None while running)."""
        return self._close_reason

    @property
    def resume_token(self) -> str | None:
        """The token a `session.resume` must present (None: not resumable)."""
        return self._resume_token

    @property
    def previous_token(self) -> str | None:
        """The token the latest resume retired."""
        return self._previous_token

    @property
    def generation(self) -> int:
        """Which attachment this is (1, then one more per resume)."""
        return self._generation

    @property
    def was_detached(self) -> bool:
        """Whether no socket is attached since a drop."""
        return self._detached_at is not None

    def touch(self, now: float) -> None:
        """A client event arrived: the idle clock restarts."""
        self._last_activity = now

    def idle_deadline(self, timeout_s: float) -> float:
        """When the session expires for lack of client events."""
        return self._last_activity + timeout_s

    def grace_deadline(self, grace_s: float) -> float | None:
        """When a detached session expires (None while attached)."""
        return None if self._detached_at is None else self._detached_at + grace_s

    def detach(self, now: float) -> None:
        """The socket dropped: wait for a resume."""
        self._state = SessionState.DETACHED
        self._detached_at = now

    def reattach(self, now: float) -> None:
        """A resume attached a socket: a new token and generation, the clock restarts."""
        self._previous_token = self._resume_token
        self._resume_token = ids.resume_token()
        self._generation += 1
        self._state = SessionState.OPEN
        self._detached_at = None
        self._last_activity = now

    def end(self, reason: str) -> None:
        """The session closed or expired."""
        self._state = SessionState.CLOSED
        self._close_reason = reason
