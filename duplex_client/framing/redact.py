"""What may enter the timeline: whitelisted facts, never payloads or credentials (§1, §10)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

AUDIO_SOURCE_KEYS = ("kind", "path", "duration_ms", "sha256")
#: Structured `audio_source` facts, kept when the source reports them (file sources do).
AUDIO_SOURCE_OPTIONAL_KEYS = ("original_format", "conversions")
VIDEO_KEYS = (
    "kind", "path", "duration_ms", "avg_fps", "num_frames", "rotation_deg",
    "sampling", "fps", "stack_frames", "jpeg_quality", "frame_max_side",
)  # fmt: skip
VIDEO_OPTIONAL_KEYS = ("width", "height")
SLIDING_WINDOW_KEYS = (
    "sliding_window_mode", "basic_window_high_tokens", "basic_window_low_tokens",
    "context_max_units", "context_previous_max_tokens",
)  # fmt: skip
_SECRET_QUERY_HINTS = ("key", "token", "secret", "auth", "password", "signature", "credential")
_MAX_TEXT = 1024
#: Bounds of a structured fact: items of a list or an object, and the length of a key.
_MAX_ITEMS = 16
_MAX_KEY = 64


def safe_scalar(value: Any) -> Any:
    """JSON scalars only; strings that could carry a payload (data URLs, long text) become None."""
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, str | os.PathLike):
        text = os.fspath(value)
        if isinstance(text, str) and not text.startswith("data:") and len(text) <= _MAX_TEXT:
            return text
    return None


def safe_object(value: Mapping[Any, Any]) -> dict[str, Any] | None:
    """A small object of scalars (short string keys, `safe_scalar` values); else None."""
    if len(value) > _MAX_ITEMS:
        return None
    return {
        k: safe_scalar(v)
        for k, v in value.items()
        if isinstance(k, str) and len(k) <= _MAX_KEY and not k.startswith("data:")
    }


def safe_structured(value: Any) -> Any:
    """A scalar, a small object of scalars, or a short list of those; anything else is None."""
    if isinstance(value, Mapping):
        return safe_object(value)
    if isinstance(value, list | tuple):
        if len(value) > _MAX_ITEMS:
            return None
        return [safe_object(v) if isinstance(v, Mapping) else safe_scalar(v) for v in value]
    return safe_scalar(value)


def pick_facts(
    info: Mapping[str, Any], keys: Sequence[str], optional: Sequence[str] = ()
) -> dict[str, Any]:
    """Every key of `keys` (null when missing) and `optional` ones when present, made safe."""
    out = {k: safe_scalar(info.get(k)) for k in keys}
    out.update({k: safe_scalar(info[k]) for k in optional if k in info})
    return out


def audio_source_facts(info: Mapping[str, Any] | None) -> dict[str, Any]:
    """The timeline's `audio_source` object (`kind: "none"` without audio)."""
    if info is None:
        return {"kind": "none", "path": None, "duration_ms": 0, "sha256": None}
    out = pick_facts(info, AUDIO_SOURCE_KEYS)
    out.update({k: safe_structured(info[k]) for k in AUDIO_SOURCE_OPTIONAL_KEYS if k in info})
    return out


def video_facts(info: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The timeline's `video` object (None without video)."""
    return None if info is None else pick_facts(info, VIDEO_KEYS, VIDEO_OPTIONAL_KEYS)


def safe_url(url: str | None) -> str | None:
    """`url` without user info, fragment or credential-like query parameters."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    kept = [
        item
        for item in parts.query.split("&")
        if item and not any(h in item.split("=", 1)[0].lower() for h in _SECRET_QUERY_HINTS)
    ]
    return urlunsplit((parts.scheme, host, parts.path, "&".join(kept), ""))
