"""`extra_body` model knobs: the effective values after an update (protocol.md §2.4).

Each knob's type and range is the schema's (`protocol.requests.ExtraBody`, checked when the
`session` is decoded); what is left here needs the session's current values.
"""

from __future__ import annotations

from typing import Any, Final

from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.requests import WINDOW_MODES, ExtraBody
from duplex_client.server.errors import Reject

#: Knobs echoed with their defaults even when a client never set them.
EXTRA_DEFAULTS: Final[dict[str, Any]] = {
    k: v
    for k, v in ExtraBody().to_dict().items()
    if k not in ("native_duplex", "duplex_initial_user_text")
}

__all__ = ["EXTRA_DEFAULTS", "WINDOW_MODES", "merge_extra_body"]


def merge_extra_body(raw: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """`base` updated by a client `extra_body` (already decoded); raises `Reject`."""
    merged = {**base, **raw}
    if "minicpmo45_native_duplex" in raw and "native_duplex" not in raw:
        merged["native_duplex"] = raw["minicpmo45_native_duplex"]
    if merged["basic_window_low_tokens"] >= merged["basic_window_high_tokens"]:
        raise Reject(
            ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG,
            "basic_window_low_tokens must be below basic_window_high_tokens",
            "extra_body.basic_window_low_tokens",
        )
    return merged
