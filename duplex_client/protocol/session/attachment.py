"""Which socket a session is on, and what resuming it on another takes (§6, §6.1), sans-I/O."""

from __future__ import annotations

from duplex_client.protocol import client_events as ce
from duplex_client.protocol import server_events as se


class Attachment:
    """The session's socket count, the server's attachment generation and the resume token."""

    def __init__(self) -> None:
        #: Whether a drop may be answered by resuming (the shell can reconnect).
        self.resume = False
        #: Sockets this session has been attached through (1 after the handshake).
        self.number = 0
        #: The server's `attachment_generation` (rises with every resume or takeover).
        self.generation: int | None = None
        self._token: str | None = None

    @property
    def token(self) -> str | None:
        """The current resume token (a secret: never log it)."""
        return self._token

    def resumable(self, session_id: str | None) -> bool:
        """Whether a drop of session `session_id` can be resumed (enabled, id and token held)."""
        return self.resume and session_id is not None and self._token is not None

    def created(self, event: se.SessionCreated) -> None:
        """The handshake's `session.created`: the first socket."""
        self.number, self.generation, self._token = (
            1,
            event.attachment_generation,
            event.resume_token,
        )

    def resumed(self, event: se.SessionResumed) -> None:
        """A new socket resumed the session: the token rotates, the generation rises."""
        self.number += 1
        if event.resume_token:
            self._token = event.resume_token
        if event.attachment_generation is not None:
            self.generation = event.attachment_generation

    def forget(self) -> None:
        """No resume is possible any more (resync required, or the token was refused)."""
        self._token = None

    def request(self, session_id: str, last_seq: int) -> ce.SessionResume:
        """The `session.resume` a new socket opens with."""
        assert self._token is not None, "no resume token"
        return ce.SessionResume(
            session_id=session_id, resume_token=self._token, last_received_server_event_seq=last_seq
        )
