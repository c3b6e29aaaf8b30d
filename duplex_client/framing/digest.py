"""Hashes of what was sent: each append's audio bytes and a running hash over every payload.

Two runs that sent the same input (the same PCM and the same image bytes, in the same
appends, in the same order) have the same `sent_sha256`, whatever their timing: it is what
proves a replay sent what the original did (protocol.md §10).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence


def audio_sha256(pcm: bytes) -> str | None:
    """The sha256 of an append's PCM bytes (None for a frame-only append)."""
    return hashlib.sha256(pcm).hexdigest() if pcm else None


class SentDigest:
    """The running sha256 over every sent payload, in order.

    Each append contributes its PCM and then each of its images, every piece framed by a
    kind byte and its length, so moving bytes from one append to the next changes the hash.
    """

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.appends = 0

    def add(self, pcm: bytes, images: Sequence[bytes] = ()) -> None:
        """Take one append's payloads."""
        self._hash.update(b"A" + len(pcm).to_bytes(8, "big"))
        self._hash.update(pcm)
        for image in images:
            self._hash.update(b"F" + len(image).to_bytes(8, "big"))
            self._hash.update(image)
        self.appends += 1

    def hexdigest(self) -> str:
        """The hash of everything taken so far."""
        return self._hash.hexdigest()
