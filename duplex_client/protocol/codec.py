"""Fast JSON and base64 for wire frames (orjson + pybase64), with ids and data-URL stripping."""

from __future__ import annotations

import os
from typing import Any

import orjson
import pybase64


class CodecError(ValueError):
    """A wire frame could not be decoded."""


class NotAnObjectError(CodecError):
    """Valid JSON that is not an object (upstream answers it `bad_event`, not `invalid_json`)."""


def dumps(event: dict[str, Any]) -> bytes:
    """Encode an event as compact UTF-8 JSON bytes (send them as a text frame)."""
    return orjson.dumps(event)


def loads(data: str | bytes | bytearray | memoryview) -> dict[str, Any]:
    """Decode one wire frame into a JSON object; anything else raises `CodecError`."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CodecError(f"invalid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise NotAnObjectError(f"expected a JSON object, got {type(obj).__name__}")
    return obj


def b64encode(data: bytes | bytearray | memoryview) -> str:
    """Standard base64 of raw bytes, as a str."""
    result: str = pybase64.b64encode_as_string(data)
    return result


def b64decode(text: str | bytes) -> bytes:
    """Strict standard base64 decode; invalid input raises `CodecError`."""
    try:
        result: bytes = pybase64.b64decode(text, validate=True)
    except (ValueError, TypeError) as exc:
        raise CodecError(f"invalid base64: {exc}") from None
    return result


def strip_data_url(value: str) -> str:
    """The bare base64 payload of `data:<mime>;base64,<payload>`; other strings unchanged."""
    if value.startswith("data:"):
        comma = value.find(",", 5, 512)
        if comma != -1 and value[5:comma].endswith(";base64"):
            return value[comma + 1 :]
    return value


def encode_image(frame: bytes | str) -> str:
    """A `video_frames` entry: bytes are base64-encoded, strings lose a data-URL prefix."""
    if isinstance(frame, str):
        return strip_data_url(frame)
    return b64encode(frame)


def new_client_event_id() -> str:
    """`evt_<32 hex>`: the id stamped on client events."""
    return "evt_" + os.urandom(16).hex()  # what `secrets.token_hex(16)` returns, in 2 calls


def new_server_event_id() -> str:
    """`event_<32 hex>`: the id stamped on server events."""
    return "event_" + os.urandom(16).hex()
