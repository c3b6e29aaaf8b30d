"""The reference server: our wire protocol on a laptop CPU, and a vLLM-Omni launcher.

Light on import: `ReferenceServer` (websockets) and the rest load on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from duplex_client.server.app import ReferenceServer
    from duplex_client.server.config import ServerConfig
    from duplex_client.server.engine.script import Script, ScriptedEngine
    from duplex_client.server.faults import Faults
    from duplex_client.server.limits import Limits

_LAZY = {
    "ReferenceServer": "duplex_client.server.app",
    "ServerConfig": "duplex_client.server.config",
    "Script": "duplex_client.server.engine.script",
    "ScriptedEngine": "duplex_client.server.engine.script",
    "Faults": "duplex_client.server.faults",
    "Limits": "duplex_client.server.limits",
}

__all__ = ["Faults", "Limits", "ReferenceServer", "Script", "ScriptedEngine", "ServerConfig"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'duplex_client.server' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
