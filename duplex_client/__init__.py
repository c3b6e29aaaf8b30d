"""duplex-client: SDK for full-duplex realtime sessions with omni models.

`import duplex_client` stays light: media, device and model libraries load only when used.
"""

from duplex_client import presets
from duplex_client.client import (
    DuplexClient,
    DuplexClientBase,
    FunctionCall,
    LocalProtocolError,
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


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("duplex-client")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


#: The installed distribution's version (one source: pyproject.toml).
__version__ = _version()

__all__ = [
    "Capabilities",
    "DuplexClient",
    "DuplexClientBase",
    "DuplexClientError",
    "DuplexConnectionError",
    "DuplexProtocolError",
    "DuplexSessionClosedError",
    "ErrorCode",
    "FunctionCall",
    "LocalProtocolError",
    "ReconnectPolicy",
    "ResponseHandle",
    "SessionConfig",
    "UnitKind",
    "__version__",
    "build_url",
    "presets",
]
