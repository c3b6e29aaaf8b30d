"""Sans-I/O wire protocol: one typed schema for both roles, codec, errors, capabilities."""

from duplex_client.protocol import client_events as _ce
from duplex_client.protocol import response_events as _re
from duplex_client.protocol import server_events as _se
from duplex_client.protocol.capabilities import Capabilities, UnitKind, derive_unit_kinds
from duplex_client.protocol.client_events import *
from duplex_client.protocol.client_events import ClientEvent
from duplex_client.protocol.codec import (
    CodecError,
    b64decode,
    b64encode,
    dumps,
    encode_image,
    loads,
    new_client_event_id,
    new_server_event_id,
    strip_data_url,
)
from duplex_client.protocol.duplex_events import HandshakeError, TurnEvent
from duplex_client.protocol.errors import (
    FATAL_RESUME_CODES,
    DuplexClientError,
    DuplexConnectionError,
    DuplexProtocolError,
    DuplexSessionClosedError,
    ErrorCode,
    ErrorInfo,
)
from duplex_client.protocol.events import (
    SERVER_EVENT_TYPES,
    TERMINAL_EVENT_TYPES,
    decode_server_event,
    parse_server_event,
)
from duplex_client.protocol.response_events import *
from duplex_client.protocol.schema import Record, Rule, SchemaError
from duplex_client.protocol.server_events import *
from duplex_client.protocol.server_events import ServerEvent

__all__ = [
    *_ce.__all__,
    *_se.__all__,
    *_re.__all__,
    "FATAL_RESUME_CODES",
    "HandshakeError",
    "TurnEvent",
    "SERVER_EVENT_TYPES",
    "TERMINAL_EVENT_TYPES",
    "Capabilities",
    "ClientEvent",
    "CodecError",
    "DuplexClientError",
    "DuplexConnectionError",
    "DuplexProtocolError",
    "DuplexSessionClosedError",
    "ErrorCode",
    "ErrorInfo",
    "Record",
    "Rule",
    "SchemaError",
    "ServerEvent",
    "UnitKind",
    "b64decode",
    "b64encode",
    "decode_server_event",
    "derive_unit_kinds",
    "dumps",
    "encode_image",
    "loads",
    "new_client_event_id",
    "new_server_event_id",
    "parse_server_event",
    "strip_data_url",
]
