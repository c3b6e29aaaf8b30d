"""Camera frames as `conversation.item.create` `input_image` items (turn-based models).

A turn-based model (Qwen3-Omni in vLLM-Omni 0.30.0, `supports_image_input`) takes no
`video_frames` on appends: images go as user items holding a JPEG data URL, kept in the
history until deleted, and the history may hold at most 8 images or 4 MiB of their data URLs
(`engine/duplex/session/control.py`). The client keeps within that by deleting its oldest
image items first.
"""

from __future__ import annotations

import secrets
from collections import deque
from typing import Any, Final

from duplex_client.protocol.codec import b64encode

MAX_IMAGES: Final = 8
MAX_IMAGE_BYTES: Final = 4 * 1024 * 1024


def data_url(image: bytes) -> str:
    """A JPEG or PNG as the data URL an `input_image` part carries."""
    mime = "image/png" if image.startswith(b"\x89PNG") else "image/jpeg"
    return f"data:{mime};base64,{b64encode(image)}"


def image_item(item_id: str, url: str) -> dict[str, Any]:
    """A user message holding one image."""
    return {
        "id": item_id,
        "type": "message",
        "role": "user",
        "content": [{"type": "input_image", "image_url": url}],
    }


class ImageItems:
    """The image items this client put in the history, oldest first, and what to delete."""

    def __init__(self, max_images: int = MAX_IMAGES, max_bytes: int = MAX_IMAGE_BYTES) -> None:
        self.max_images = max_images
        self.max_bytes = max_bytes
        self._held: deque[tuple[str, int]] = deque()
        self._session_id: str | None = None
        #: Images sent and deleted so far (for the record).
        self.sent = 0
        self.deleted = 0

    def in_session(self, session_id: str | None) -> None:
        """Forget the items held when the session changed (a new one holds none of them)."""
        if session_id != self._session_id:
            self._session_id = session_id
            self._held.clear()

    @staticmethod
    def new_id() -> str:
        """A fresh item id."""
        return f"item_{secrets.token_hex(16)}"

    def make_room(self, size: int) -> list[str]:
        """The oldest items to delete before one of `size` bytes fits (they are forgotten)."""
        out: list[str] = []
        held = sum(n for _, n in self._held)
        while self._held and (
            len(self._held) + 1 > self.max_images or held + size > self.max_bytes
        ):
            item_id, n = self._held.popleft()
            held -= n
            out.append(item_id)
        self.deleted += len(out)
        return out

    def added(self, item_id: str, size: int) -> None:
        """An item of `size` bytes of data URL went out."""
        self._held.append((item_id, size))
        self.sent += 1
