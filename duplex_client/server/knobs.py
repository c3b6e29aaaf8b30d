"""`extra_body` model knobs: defaults and validation (protocol.md §2.4)."""

from __future__ import annotations

from typing import Any, Final

from duplex_client.protocol.errors import ErrorCode
from duplex_client.server.errors import Reject

WINDOW_MODES: Final = ("off", "basic", "context")
EXTRA_DEFAULTS: Final[dict[str, Any]] = {
    "auto_response": True,
    "force_listen_count": 0,
    "return_stage_metrics": False,
    "sliding_window_mode": "off",
    "basic_window_high_tokens": 8000,
    "basic_window_low_tokens": 6000,
    "context_max_units": 24,
    "context_previous_max_tokens": 500,
}


def _pos_int(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise Reject(
            ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
            f"{key} must be a positive integer",
            f"extra_body.{key}",
        )
    return value


def validate_extra_body(raw: Any, base: dict[str, Any]) -> dict[str, Any]:
    """`base` updated by a client `extra_body`, validated (§2.4); raises `Reject`."""
    if not isinstance(raw, dict):
        raise Reject(ErrorCode.BAD_EVENT, "extra_body must be an object", "extra_body")
    merged = {**base, **raw}
    if "minicpmo45_native_duplex" in raw and "native_duplex" not in raw:
        merged["native_duplex"] = raw["minicpmo45_native_duplex"]
    for key in ("auto_response", "native_duplex", "return_stage_metrics"):
        if key in merged and not isinstance(merged[key], bool):
            raise Reject(
                ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
                f"{key} must be true or false",
                f"extra_body.{key}",
            )
    flc = merged.get("force_listen_count", 0)
    if isinstance(flc, bool) or not isinstance(flc, int) or flc < 0:
        raise Reject(
            ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
            "force_listen_count must be a non-negative integer",
            "extra_body.force_listen_count",
        )
    text = merged.get("duplex_initial_user_text")
    if text is not None and not isinstance(text, str):
        raise Reject(
            ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
            "duplex_initial_user_text must be a string",
            "extra_body.duplex_initial_user_text",
        )
    if merged.get("sliding_window_mode") not in WINDOW_MODES:
        raise Reject(
            ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
            f"sliding_window_mode must be one of {WINDOW_MODES}",
            "extra_body.sliding_window_mode",
        )
    for key in (
        "basic_window_high_tokens",
        "basic_window_low_tokens",
        "context_max_units",
        "context_previous_max_tokens",
    ):
        _pos_int(merged[key], key)
    if merged["basic_window_low_tokens"] >= merged["basic_window_high_tokens"]:
        raise Reject(
            ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
            "basic_window_low_tokens must be below basic_window_high_tokens",
            "extra_body.basic_window_low_tokens",
        )
    return merged
