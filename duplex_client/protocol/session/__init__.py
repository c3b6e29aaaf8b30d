"""The client role's session, sans-I/O: `ClientConnection` and the pure response state.

Bytes or typed events in, effects out (h11-style): states, seq/acks, the resend outbox,
responses and their decisions, request outcomes, the input counted. No socket, no sleeping,
no asyncio; the asyncio shell is `duplex_client.client`.
"""

from duplex_client.protocol.session.config import SessionConfig, redact
from duplex_client.protocol.session.connection import ClientConnection
from duplex_client.protocol.session.effects import (
    Closed,
    Decided,
    Deliver,
    Effect,
    Output,
    Reconnect,
    Resend,
    Resynced,
    ScheduleAck,
    ScheduleHeartbeat,
    SchedulePlaybackAcks,
    Send,
    Settled,
)
from duplex_client.protocol.session.inputs import AppendFields, AudioEncoder, PcmArray, PcmInput
from duplex_client.protocol.session.outbox import Outbox, OutboxEntry
from duplex_client.protocol.session.outcomes import Outcomes, unwrap
from duplex_client.protocol.session.playback import PlaybackAcks
from duplex_client.protocol.session.responses import (
    AckPolicy,
    Decision,
    ResponseFactory,
    ResponseState,
    ResponseTracker,
)
from duplex_client.protocol.session.state import (
    ConnectionState,
    LocalProtocolError,
    SessionEndedError,
    State,
)

__all__ = [
    "AckPolicy",
    "AppendFields",
    "AudioEncoder",
    "ClientConnection",
    "Closed",
    "ConnectionState",
    "Decided",
    "Decision",
    "Deliver",
    "Effect",
    "LocalProtocolError",
    "Outbox",
    "OutboxEntry",
    "Outcomes",
    "Output",
    "PcmArray",
    "PcmInput",
    "PlaybackAcks",
    "Reconnect",
    "Resend",
    "ResponseFactory",
    "ResponseState",
    "ResponseTracker",
    "Resynced",
    "ScheduleAck",
    "ScheduleHeartbeat",
    "SchedulePlaybackAcks",
    "Send",
    "SessionConfig",
    "SessionEndedError",
    "Settled",
    "State",
    "redact",
    "unwrap",
]
