"""The plan cache's pure part: keys, the entry format (and its checks), LRU eviction."""

from __future__ import annotations

import pytest

from duplex_client.framing.plan_cache import (
    CorruptEntry,
    StoredEntry,
    decode_entry,
    encode_entry,
    evictions,
    frames_entry,
    frames_from_entry,
    plan_key,
)
from duplex_client.framing.sources import EncodedImage, FrameGroup

PARAMS = {"sha256": "ab" * 32, "fps": 1.0, "frame_max_side": 0, "jpeg_quality": 90}


def test_a_key_changes_with_every_parameter_and_kind_but_not_with_their_order() -> None:
    key = plan_key("frames", PARAMS)
    assert plan_key("frames", dict(reversed(list(PARAMS.items())))) == key
    assert plan_key("pcm", PARAMS) != key
    for name, other in (("sha256", "ac" * 32), ("fps", 2.0), ("frame_max_side", 640)):
        assert plan_key("frames", {**PARAMS, name: other}) != key, name
    assert plan_key("frames", {**PARAMS, "jpeg_quality": 89}) != key


def test_an_entry_reads_back_and_any_damage_is_corrupt_never_a_plan() -> None:
    key = plan_key("pcm", PARAMS)
    data = encode_entry("pcm", key, {"warnings": ["w"]}, b"\x01\x02" * 500)
    meta, payload = decode_entry(data, "pcm", key)
    assert meta == {"warnings": ["w"]} and bytes(payload) == b"\x01\x02" * 500
    flipped = bytearray(data)
    flipped[-7] ^= 1
    damaged = {
        "truncated": data[:-1],
        "one byte changed": bytes(flipped),
        "cut in the header": data[:20],
        "empty": b"",
        "not ours": b"RIFF" + data[4:],
    }
    for what, bad in damaged.items():
        with pytest.raises(CorruptEntry):
            decode_entry(bad, "pcm", key)
            pytest.fail(what)
    with pytest.raises(CorruptEntry, match="another key"):
        decode_entry(data, "pcm", plan_key("pcm", {**PARAMS, "fps": 2.0}))


def test_frame_groups_by_window_survive_the_entry_exactly() -> None:
    base = EncodedImage(b"\xff\xd8base", pts_ms=1000, width=64, height=48)
    comp = EncodedImage(b"\xff\xd8comp", pts_ms=(1250, 1500), width=64, height=96, role="composite")
    windows = {
        (0, 1000): FrameGroup(base=base),
        (1000, 2000): FrameGroup(base=base, composite=comp),
        (2000, 3000): FrameGroup(base=base, held=True),
        (3000, 4000): None,
    }
    meta, payload = frames_entry(windows)
    key = plan_key("frames", PARAMS)
    back = frames_from_entry(
        *decode_entry(encode_entry("frames", key, meta, payload), "frames", key)
    )
    assert back == windows


def test_eviction_drops_the_least_recently_used_until_the_rest_fit() -> None:
    entries = [StoredEntry("a", 40, 3.0), StoredEntry("b", 40, 1.0), StoredEntry("c", 40, 2.0)]
    assert evictions(entries, 120) == []
    assert evictions(entries, 100) == ["b"]
    assert evictions(entries, 40) == ["b", "c"]
    # the entry just written goes last, even when it is the oldest by its clock
    assert evictions(entries, 40, keep="b") == ["c", "a"]
    assert evictions(entries, 0, keep="b") == ["c", "a", "b"]
