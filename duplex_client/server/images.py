"""`input_image` conversation items: camera frames for a turn-based model (Qwen3-Omni-style).

As vLLM-Omni 0.30.0 takes them (`engine/duplex/session/control.py`, the
`conversation.item.create` branch): only in `user` messages, only as a JPEG or PNG base64 data
URL of at most 4 000 000 characters (`protocol/realtime/items.py`), only where the session
supports images (`supports_image_input`), and at most 8 images or 4 MiB of data URLs in the
history at once (`input_backpressure`: delete old items first). The model's prompt keeps the
newest 8 (`qwen3_omni/duplex/plugin.py` `MAX_PROMPT_IMAGES`).
"""

from __future__ import annotations

from typing import Any, Final

from duplex_client.protocol.codec import CodecError, b64decode
from duplex_client.protocol.errors import ErrorCode
from duplex_client.server.errors import Reject
from duplex_client.server.ports import SessionPort

#: Upstream's image budget of a session's history: images, and bytes of their data URLs.
MAX_IMAGES: Final = 8
MAX_IMAGE_BYTES: Final = 4 * 1024 * 1024
#: One image's limit, as for a camera frame on an append (`validate_realtime_video_frames`).
MAX_IMAGE_B64_CHARS: Final = 4_000_000
_PREFIXES: Final = ("data:image/jpeg;base64,", "data:image/png;base64,")
#: The signatures upstream checks (`validate_realtime_video_frames`).
_MAGIC: Final = (b"\xff\xd8", b"\x89PNG")


def image_urls(item: dict[str, Any]) -> list[Any]:
    """The `input_image` data URLs of an item (non-strings included as they are)."""
    content = item.get("content")
    if not isinstance(content, list):
        return []
    return [
        p.get("image_url")
        for p in content
        if isinstance(p, dict) and p.get("type") == "input_image"
    ]


def check_images(s: SessionPort, item: dict[str, Any]) -> None:
    """Refuse an item's images as upstream does (nothing when it carries none)."""
    urls = image_urls(item)
    if not urls:
        return
    if item.get("role") != "user":
        raise Reject(ErrorCode.INVALID_IMAGE, "input_image is supported only in user messages")
    if not s.caps.supports_image_input:
        raise Reject(
            ErrorCode.UNSUPPORTED, "This model does not support input_image conversation items"
        )
    for url in urls:
        if not isinstance(url, str) or not url.startswith(_PREFIXES):
            raise Reject(
                ErrorCode.INVALID_IMAGE, "input_image requires a JPEG or PNG base64 data URL"
            )
        b64 = url.split(",", 1)[1]
        if len(b64) > MAX_IMAGE_B64_CHARS:  # `protocol/realtime/items.py`, one frame's limit
            raise Reject(
                ErrorCode.INVALID_IMAGE,
                f"input_image exceeds {MAX_IMAGE_B64_CHARS} base64 characters; reduce its "
                "resolution or JPEG quality",
            )
        try:
            data = b64decode(b64)
        except CodecError:
            raise Reject(ErrorCode.INVALID_IMAGE, "input_image is not valid base64") from None
        if not data.startswith(_MAGIC):
            raise Reject(ErrorCode.INVALID_IMAGE, "input_image is not a JPEG or PNG image")
    held = [u for stored in s.conversation.items.values() for u in image_urls(stored)]
    held_urls = [u for u in held if isinstance(u, str)]
    if (
        len(held_urls) + len(urls) > MAX_IMAGES
        or sum(map(len, [*held_urls, *urls])) > MAX_IMAGE_BYTES
    ):
        raise Reject(
            ErrorCode.INPUT_BACKPRESSURE,
            f"Image context exceeds {MAX_IMAGES} images or 4 MiB; delete old items",
        )
