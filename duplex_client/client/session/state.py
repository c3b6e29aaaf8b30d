"""What a session client reads from its connection: ids, capabilities, counters, the end."""

from __future__ import annotations

from typing import Any

from duplex_client.client.driver import Driver
from duplex_client.client.responses import ResponseHandle
from duplex_client.client.resume import ReconnectReport
from duplex_client.framing.pcm_format import PcmFormat
from duplex_client.protocol import server_events as se
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.session import (
    AckPolicy,
    ClientConnection,
    ResponseTracker,
    SessionConfig,
)


class SessionState:
    """Read-only views of the session's state (the connection's), mixed into the client."""

    #: The session's protocol state (sans-I/O).
    connection: ClientConnection[ResponseHandle]
    config: SessionConfig
    _driver: Driver

    @property
    def session_id(self) -> str | None:
        """The server-allocated session id (None before the handshake)."""
        return self.connection.session_id

    @property
    def session(self) -> dict[str, Any]:
        """The effective session object (`session.created`, then each `session.updated`)."""
        return self.connection.session

    @property
    def capabilities(self) -> Capabilities:
        """The server's capabilities from the handshake."""
        return self.connection.capabilities

    @property
    def attachment_generation(self) -> int | None:
        """The server's attachment generation (it rises with every resume)."""
        return self.connection.attachment.generation

    @property
    def last_server_event_seq(self) -> int:
        """The highest `server_event_seq` processed."""
        return self.connection.seq.last

    @property
    def errors(self) -> list[se.ErrorEvent]:
        """Every `error` event received, in order."""
        return self.connection.errors

    @property
    def closed_reason(self) -> str | None:
        """Why the session ended (None while it runs, and if it never opened)."""
        return self.connection.closed_reason

    @property
    def tracker(self) -> ResponseTracker[ResponseHandle]:
        """The response tracker: every handle, the active one, the finished ones."""
        return self.connection.tracker

    @property
    def ack_policy(self) -> AckPolicy:
        """`received` (what arrived counts as played) or `manual` (the caller acks)."""
        return self.connection.playback.policy

    @property
    def heartbeat_interval_s(self) -> float | None:
        """Seconds between heartbeats (None: none)."""
        return self.connection.heartbeat_interval_s

    @property
    def reconnects(self) -> list[ReconnectReport]:
        """One report per reconnection, in order."""
        return self._driver.reconnects

    @property
    def session_ids(self) -> list[str]:
        """Every session this client ran, in order: more than one after a journal gap (§6.1)."""
        ids: list[str] = []
        for report in self._driver.reconnects:
            if report.outcome == "new_session" and report.new_session_id is not None:
                if not ids and report.previous_session_id is not None:
                    ids.append(report.previous_session_id)
                ids.append(report.new_session_id)
        return ids or ([self.session_id] if self.session_id is not None else [])

    @property
    def audio_end_ms(self) -> int:
        """Cumulative audio appended so far, rounded to ms."""
        return self.connection.input.audio_end_ms

    @property
    def audio_samples(self) -> int:
        """Cumulative audio appended so far, in samples."""
        return self.connection.input.samples

    @property
    def input_pcm_format(self) -> PcmFormat:
        """The session's input encoding and rate, which `stream` frames and sends."""
        return PcmFormat(self.config.input_audio_format, self.config.input_sample_rate_hz)

    @property
    def is_open(self) -> bool:
        """Whether the session is usable for sending (also while it is being resumed)."""
        return self.connection.is_open

    @property
    def connected(self) -> bool:
        """Whether a socket is attached right now (False while reconnecting)."""
        return self.connection.writable

    def acks_expire(self) -> bool:
        """Whether an ack for a response finished before a later commit is refused (§5)."""
        return self.connection.acks_expire()

    @property
    def continuous_stream(self) -> bool:
        """`response_lifecycle: continuous_stream`: one response, drained by `end_stream`."""
        return self.capabilities.response_lifecycle == "continuous_stream"

    @property
    def takes_commits(self) -> bool:
        """Whether turns end with a commit (False: `supports_client_commit: false`, or a stream)."""
        return self.capabilities.supports_client_commit and not self.continuous_stream
