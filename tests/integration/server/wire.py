"""Raw-JSON helpers for protocol conformance tests: a real socket, no SDK client."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import struct
from collections.abc import Callable
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

TIMEOUT = 10.0
JPEG = b"\xff\xd8\xff\xe0" + b"\x00\x10JFIF" + bytes(range(64))
PNG = b"\x89PNG\r\n\x1a\n" + bytes(32)


def b64(data: bytes) -> str:
    """Standard base64 text."""
    return base64.b64encode(data).decode()


def tone(ms: int, rate: int = 16000, hz: float = 440.0) -> bytes:
    """PCM16 mono sine (loud enough to count as speech)."""
    n = rate * ms // 1000
    return b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * hz * i / rate))) for i in range(n)
    )


def silence(ms: int, rate: int = 16000) -> bytes:
    """PCM16 mono zeros."""
    return bytes(2 * (rate * ms // 1000))


def frame(n: int = 0) -> str:
    """A tiny base64 'JPEG' (valid signature; distinct per n)."""
    return b64(JPEG + bytes([n % 256]) * 8)


def session_update(**session: Any) -> dict[str, Any]:
    """A handshake `session.update` with the client's usual fields."""
    body: dict[str, Any] = {
        "model": "test-model",
        "modalities": ["audio", "text"],
        "input_audio_format": "pcm16",
        "output_audio_format": "pcm16",
        "sample_rate_hz": 16000,
        "audio": {"input": {"sample_rate_hz": 16000}, "output": {"sample_rate_hz": 24000}},
        "turn_detection": None,
        "extra_body": {"auto_response": True},
    }
    body.update(session)
    if body.get("overlap_policy") == "barge_in_on_speech" and "turn_detection" not in session:
        # `turn_detection: null` makes the policy `listen_only` (vLLM-Omni 0.30.0 refuses the
        # pair); our server's energy gate runs when turn detection is not mentioned
        del body["turn_detection"]
    return {"type": "session.update", "event_id": "evt_open", "session": body}


def append(
    audio: bytes = b"", *, event_id: str, frames: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    """An `input_audio_buffer.append`."""
    event: dict[str, Any] = {
        "type": "input_audio_buffer.append",
        "event_id": event_id,
        "audio": b64(audio),
    }
    if frames:
        event["video_frames"] = frames
    event.update(extra)
    return event


class Wire:
    """One raw WebSocket connection speaking JSON text frames."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.received: list[dict[str, Any]] = []

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        query: str = "duplex=1&model=test-model&autostart=0",
        headers: dict[str, str] | None = None,
    ) -> Wire:
        """Open a socket (no proxy, no compression)."""
        ws = await connect(
            f"{url}?{query}" if query else url,
            proxy=None,
            compression=None,
            additional_headers=headers,
            max_size=None,
            open_timeout=TIMEOUT,
        )
        return cls(ws)

    async def send(self, event: dict[str, Any] | str | bytes) -> None:
        """Send an event (dicts are JSON-encoded; str/bytes go as they are)."""
        if isinstance(event, dict):
            try:
                event = orjson.dumps(event).decode()
            except TypeError:  # e.g. a fuzzed integer beyond 64 bits: still valid JSON
                event = json.dumps(event)
        await self.ws.send(event)

    async def recv(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next event."""
        data = await asyncio.wait_for(self.ws.recv(), timeout)
        event = orjson.loads(data)
        self.received.append(event)
        return event

    async def until(
        self, match: str | Callable[[dict[str, Any]], bool], timeout: float = TIMEOUT
    ) -> list[dict[str, Any]]:
        """Events up to and including the first matching one (a type name or a predicate)."""
        pred = (lambda e: e.get("type") == match) if isinstance(match, str) else match
        out: list[dict[str, Any]] = []
        async with asyncio.timeout(timeout):
            while True:
                event = await self.recv()
                out.append(event)
                if pred(event):
                    return out

    async def error(self, code: str | None = None) -> dict[str, Any]:
        """The next error event, nested or flat (asserting its code when given)."""
        events = await self.until("error")
        err = events[-1]
        if code is not None:
            assert error_code(err) == code, err
        return err

    async def open(self, **session: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Handshake: returns (`session.created`, `session.updated`)."""
        await self.send(session_update(**session))
        created = await self.recv()
        assert created["type"] == "session.created", created
        updated = await self.recv()
        assert updated["type"] == "session.updated", updated
        return created, updated

    async def closed(self, timeout: float = TIMEOUT) -> tuple[int | None, list[dict[str, Any]]]:
        """Read until the server closes; returns (close code, events read meanwhile)."""
        events: list[dict[str, Any]] = []
        try:
            async with asyncio.timeout(timeout):
                async for data in self.ws:
                    events.append(orjson.loads(data))
        except ConnectionClosed:
            pass
        return self.ws.close_code, events

    async def close(self) -> None:
        """Close the socket."""
        await self.ws.close()


def error_code(err: dict[str, Any]) -> str | None:
    """The code of an `error` event: nested `error.code`, or the flat handshake `code`."""
    body = err.get("error")
    return body.get("code") if isinstance(body, dict) else err.get("code")


def is_handshake_error(err: dict[str, Any], code: str) -> bool:
    """Whether `err` is a handshake refusal as vLLM-Omni 0.30.0 sends it: nested, unsequenced."""
    body = err.get("error")
    return (
        err.get("type") == "error"
        and isinstance(body, dict)
        and body.get("code") == code
        and isinstance(body.get("message"), str)
        and "server_event_seq" not in err
    )


def is_flat_error(err: dict[str, Any], code: str) -> bool:
    """Whether `err` is the flat handshake shape `{type: error, error: <message>, code}`."""
    message = err.get("error")
    return err.get("type") == "error" and isinstance(message, str) and err.get("code") == code


def seqs(events: list[dict[str, Any]]) -> list[int]:
    """The `server_event_seq` values present, in order."""
    return [e["server_event_seq"] for e in events if "server_event_seq" in e]


async def answered_turn_request(url: str, response: dict[str, Any]) -> Wire:
    """A manual session with one committed turn, then `response.create {response}` (evt_r)."""
    wire = await Wire.connect(url)
    await wire.open(extra_body={"auto_response": False})
    await wire.send(append(tone(400), event_id="evt_a"))
    await wire.send(
        {"type": "input_audio_buffer.commit", "event_id": "evt_c", "response_create": False}
    )
    await wire.until("input_audio_buffer.committed")
    await wire.send({"type": "response.create", "event_id": "evt_r", "response": response})
    return wire
