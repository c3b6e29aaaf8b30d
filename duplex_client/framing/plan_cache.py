"""The plan cache's pure part: entry keys, the entry format and which entries to evict.

A plan cache entry holds what planning a source costs to make: a file's decoded PCM in the
session's format, or a video's sampled frame groups (JPEG bytes, pts, sizes) per unit window.
The framer still runs on every stream (it only slices memory), so the grid, the chunking, the
tail silence, the soundtrack policy and server commits never need to be part of a key: they
are applied afresh to the same bytes. The key is the sha256 of everything that shapes the
bytes themselves: the source file's sha256, the decoding and encoding parameters, the output
format, the versions of the libraries that decode and encode, and `PLAN_CACHE_VERSION`.

One entry is one file: `MAGIC`, the header's length (8 bytes, little-endian), the header
(JSON: kind, key, the payload's length and sha256, and what the payload's bytes are), then
the payload (the PCM, or the JPEGs back to back). Reading it is one read, one sha256 over the
payload and slices: no parsing per byte and nothing to decode. A header or payload that does
not check out is `CorruptEntry`, never a plan.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from duplex_client.framing.sources import EncodedImage, FrameGroup

#: Bump when what an entry holds, or how the bytes in it are made, changes.
PLAN_CACHE_VERSION = 1
MAGIC = b"DXPLAN1\n"
#: The suffix of an entry's file name (`<key>.plan`).
ENTRY_SUFFIX = ".plan"
_LENGTH_BYTES = 8
#: A header longer than this is not one of ours (a video's windows take ~100 bytes each).
_MAX_HEADER = 64 << 20

#: A unit window of a video: (start_ms, end_ms), relative to the clip.
Window = tuple[int, int]


class CorruptEntry(ValueError):
    """An entry's bytes do not check out (truncated, altered, another key): a miss."""


def plan_key(kind: str, params: Mapping[str, Any]) -> str:
    """The hex sha256 naming the entry of `kind` made with `params` (JSON-serialisable)."""
    canonical = json.dumps(
        {"kind": kind, "version": PLAN_CACHE_VERSION, "params": params},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def encode_entry(kind: str, key: str, meta: Mapping[str, Any], payload: bytes) -> bytes:
    """The bytes of an entry: magic, header length, header, payload."""
    header = {
        "kind": kind,
        "key": key,
        "version": PLAN_CACHE_VERSION,
        "payload_bytes": len(payload),
        "payload_sha256": hashlib.sha256(payload).hexdigest(),
        "meta": dict(meta),
    }
    raw = json.dumps(header, separators=(",", ":")).encode()
    return b"".join((MAGIC, len(raw).to_bytes(_LENGTH_BYTES, "little"), raw, payload))


def decode_entry(data: bytes, kind: str, key: str) -> tuple[dict[str, Any], memoryview]:
    """(meta, payload) of an entry's bytes; `CorruptEntry` saying why if they do not check out."""
    if not data.startswith(MAGIC):
        raise CorruptEntry("not a plan cache entry")
    at = len(MAGIC) + _LENGTH_BYTES
    if len(data) < at:
        raise CorruptEntry("truncated header")
    length = int.from_bytes(data[len(MAGIC) : at], "little")
    if length > _MAX_HEADER or len(data) < at + length:
        raise CorruptEntry("truncated header")
    try:
        header = json.loads(data[at : at + length])
    except ValueError:
        raise CorruptEntry("unreadable header") from None
    if not isinstance(header, dict) or not isinstance(header.get("meta"), dict):
        raise CorruptEntry("unreadable header")
    if (header.get("kind"), header.get("key")) != (kind, key):
        raise CorruptEntry("written for another key")
    payload = memoryview(data)[at + length :]
    expected = header.get("payload_bytes")
    if len(payload) != expected:
        raise CorruptEntry(f"payload is {len(payload)} bytes, {expected} expected")
    if hashlib.sha256(payload).hexdigest() != header.get("payload_sha256"):
        raise CorruptEntry("payload sha256 mismatch")
    return header["meta"], payload


def frames_entry(windows: Mapping[Window, FrameGroup | None]) -> tuple[dict[str, Any], bytes]:
    """(meta, payload) of a video's frame groups by unit window, JPEGs back to back."""
    parts: list[bytes] = []
    offset = 0

    def image(img: EncodedImage | None) -> dict[str, Any] | None:
        nonlocal offset
        if img is None:
            return None
        parts.append(img.data)
        row = {
            "at": offset,
            "n": len(img.data),
            "pts_ms": list(img.pts_ms) if isinstance(img.pts_ms, tuple) else img.pts_ms,
            "width": img.width,
            "height": img.height,
            "role": img.role,
        }
        offset += len(img.data)
        return row

    rows: list[dict[str, Any]] = []
    for (start, end), group in sorted(windows.items()):
        if group is None:
            rows.append({"start_ms": start, "end_ms": end, "group": None})
            continue
        entry = {"base": image(group.base), "composite": image(group.composite), "held": group.held}
        rows.append({"start_ms": start, "end_ms": end, "group": entry})
    return {"windows": rows}, b"".join(parts)


def frames_from_entry(
    meta: Mapping[str, Any], payload: memoryview
) -> dict[Window, FrameGroup | None]:
    """The frame groups by unit window an entry holds (`CorruptEntry` if they do not fit)."""

    def image(row: Any) -> EncodedImage | None:
        if row is None:
            return None
        at, n = int(row["at"]), int(row["n"])
        if at < 0 or n < 0 or at + n > len(payload):
            raise CorruptEntry("an image lies outside the payload")
        pts = row["pts_ms"]
        return EncodedImage(
            data=bytes(payload[at : at + n]),
            pts_ms=tuple(int(p) for p in pts) if isinstance(pts, list) else int(pts),
            width=int(row["width"]),
            height=int(row["height"]),
            role="composite" if row["role"] == "composite" else "base",
        )

    windows: dict[Window, FrameGroup | None] = {}
    try:
        for row in meta["windows"]:
            group = row["group"]
            window = (int(row["start_ms"]), int(row["end_ms"]))
            if group is None:
                windows[window] = None
                continue
            base = image(group["base"])
            if base is None:
                raise CorruptEntry("a frame group without its base image")
            composite = image(group["composite"])
            windows[window] = FrameGroup(base=base, composite=composite, held=bool(group["held"]))
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, CorruptEntry):
            raise
        raise CorruptEntry(f"unreadable frame windows ({exc.__class__.__name__})") from None
    return windows


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """An entry file as the cache directory lists it."""

    name: str
    size: int
    #: When it was last written or read (the LRU order).
    used: float


def evictions(entries: Sequence[StoredEntry], max_bytes: int, *, keep: str = "") -> list[str]:
    """The entries to delete, least recently used first, so the rest fit in `max_bytes`.

    `keep` (the entry just written) goes last: it is evicted only if it alone is too big.
    """
    total = sum(e.size for e in entries)
    order = sorted(entries, key=lambda e: (e.name == keep, e.used, e.name))
    gone: list[str] = []
    for entry in order:
        if total <= max_bytes:
            break
        gone.append(entry.name)
        total -= entry.size
    return gone
