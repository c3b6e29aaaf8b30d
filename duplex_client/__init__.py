"""duplex-client: SDK for full-duplex realtime sessions with omni models.

`import duplex_client` stays light: media, device and model libraries load only when used.
"""

from duplex_client import presets
from duplex_client.client import (
    DuplexClient,
    DuplexClientBase,
    ReconnectPolicy,
    ResponseHandle,
    SessionConfig,
    build_url,
)
from duplex_client.protocol import (
    Capabilities,
    DuplexClientError,
    DuplexConnectionError,
    DuplexProtocolError,
    DuplexSessionClosedError,
    ErrorCode,
    UnitKind,
)

__version__ = "0.1.0"

__all__ = [
    "Capabilities",
    "DuplexClient",
    "DuplexClientBase",
    "DuplexClientError",
    "DuplexConnectionError",
    "DuplexProtocolError",
    "DuplexSessionClosedError",
    "ErrorCode",
    "ReconnectPolicy",
    "ResponseHandle",
    "SessionConfig",
    "UnitKind",
    "__version__",
    "build_url",
    "presets",
]
