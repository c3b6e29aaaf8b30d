"""duplex-client: SDK for full-duplex realtime sessions with omni models.

`import duplex_client` stays light: media, device and model libraries load only when used.
"""

import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

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

#: Modules that moved in 0.2 (the run layer's packages) → where they are now. The old
#: name imports the new module for one more release, with a `DeprecationWarning`.
MOVED_MODULES = {
    "duplex_client.results": "duplex_client.run.result",
    "duplex_client.run_options": "duplex_client.run.options",
    "duplex_client.run_listening": "duplex_client.run.listening",
    "duplex_client.run_watch": "duplex_client.run.watch",
    "duplex_client.run_tools": "duplex_client.run.tools",
    "duplex_client.listening_report": "duplex_client.run.listening_report",
    "duplex_client.embedded": "duplex_client.run.embedded",
    "duplex_client.payloads": "duplex_client.bundle.payloads",
    "duplex_client.thumbnails": "duplex_client.bundle.thumbnails",
    "duplex_client.wavfile": "duplex_client.bundle.wavfile",
    "duplex_client.rederive": "duplex_client.replay.rederive",
    "duplex_client.sweep": "duplex_client.replay.sweep",
    "duplex_client.sweep_conditions": "duplex_client.replay.conditions",
    "duplex_client.live.camera": "duplex_client.media.devices.camera",
    "duplex_client.live.devices": "duplex_client.media.devices.lookup",
    "duplex_client.live.filemic": "duplex_client.media.devices.filemic",
    "duplex_client.live.mic": "duplex_client.media.devices.mic",
    "duplex_client.live.player": "duplex_client.media.devices.player",
    "duplex_client.live.sources": "duplex_client.media.devices.capture",
    "duplex_client.live.keys": "duplex_client.media.devices.keys",
    "duplex_client.live.virtual_player": "duplex_client.analysis.virtual_player",
    "duplex_client.live.playback": "duplex_client.run.playback",
    "duplex_client.live.controls": "duplex_client.run.controls",
    "duplex_client.live.progress": "duplex_client.run.progress",
    "duplex_client.live.usage": "duplex_client.run.turns",
    "duplex_client.live.session": "duplex_client.run.sources.devices",
    "duplex_client.live.options": "duplex_client.run.live",
    "duplex_client.live.run": "duplex_client.run.live",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a moved module's old name as its new module, with a `DeprecationWarning`."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """A spec for an old name in `MOVED_MODULES` (None for any other name)."""
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        """The new module itself (so both names hold the same objects)."""
        new = MOVED_MODULES[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}; the old name goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the new module is already imported."""


sys.meta_path.insert(0, _MovedModules())


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("duplex-client")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


#: The installed distribution's version (one source: pyproject.toml).
__version__ = _version()

__all__ = [
    "MOVED_MODULES",
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
