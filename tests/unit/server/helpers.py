"""Sans-I/O helpers: drive a `DuplexSession` directly with injected time."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import orjson

from duplex_client.server.config import ServerConfig
from duplex_client.server.emitter import CloseSocket, Output, Send
from duplex_client.server.registry import Registry
from duplex_client.server.session import DuplexSession


def tone(ms: int, rate: int = 16000) -> bytes:
    """Loud PCM16 (speech by the RMS gate)."""
    t = np.arange(rate * ms // 1000) / rate
    return (np.sin(2 * np.pi * 440 * t) * 8000).astype("<i2").tobytes()


def b64(data: bytes) -> str:
    """Base64 text."""
    return base64.b64encode(data).decode()


def events(outputs: list[Output]) -> list[dict[str, Any]]:
    """Decoded events among outputs."""
    return [orjson.loads(o.data) for o in outputs if isinstance(o, Send)]


def closes(outputs: list[Output]) -> list[CloseSocket]:
    """Close directives among outputs."""
    return [o for o in outputs if isinstance(o, CloseSocket)]


def types(outputs: list[Output]) -> list[str]:
    """Event types among outputs."""
    return [e["type"] for e in events(outputs)]


def open_session(now: float = 0.0, **config: Any) -> tuple[Registry, DuplexSession, list[Output]]:
    """A registry with one open session (handshake outputs returned)."""
    session_obj = config.pop("session", {})
    config.setdefault("engine", "scripted")
    registry = Registry(ServerConfig(**config))
    session, outputs = registry.open(
        {
            "type": "session.update",
            "event_id": "evt_open",
            "session": {"model": "m", **session_obj},
        },
        now,
    )
    assert session is not None, events(outputs)
    return registry, session, outputs


def append(audio: bytes = b"", event_id: str = "evt_a", **extra: Any) -> dict[str, Any]:
    """An append event."""
    return {"type": "input_audio_buffer.append", "event_id": event_id, "audio": b64(audio), **extra}
