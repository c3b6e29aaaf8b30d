"""Per-image facts of an append row's video frames (sizes and hashes, never the bytes)."""

from __future__ import annotations

import hashlib
from typing import Any

from duplex_client.framing.sources import FrameGroup


def frame_records(group: FrameGroup | None) -> list[dict[str, Any]]:
    """Per-image facts for a row: role, source pts, held, size and sha256 (never the bytes)."""
    if group is None:
        return []
    out: list[dict[str, Any]] = []
    for role, image in zip(("base", "composite"), group.images, strict=False):
        pts = list(image.pts_ms) if isinstance(image.pts_ms, tuple) else image.pts_ms
        record: dict[str, Any] = {
            "role": role,
            "source_pts_ms": pts,
            "held": group.held,
            "bytes": len(image.data),
            "sha256": hashlib.sha256(image.data).hexdigest(),
        }
        if image.width and image.height:
            record["width"], record["height"] = image.width, image.height
        out.append(record)
    return out
