"""The timeline file: written with the bundle's mode (umask respected), and the chunk it used."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from duplex_client.framing import UnitGrid
from duplex_client.framing.timeline import InputTimeline


def test_the_timeline_file_respects_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = InputTimeline(path=tmp_path / "input_timeline.json").write()
        other = tmp_path / "result.json"
        other.write_text("{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(other.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    old = os.umask(0o077)
    try:
        private = InputTimeline().write(tmp_path / "private.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600


def test_a_chunk_longer_than_the_units_is_recorded_as_used() -> None:
    timeline = InputTimeline()
    timeline.set_unit_grid(UnitGrid(first_unit_ms=500, chunk_period_ms=500))
    timeline.describe_stream(chunk_ms=800, media_origin_ms=0)
    doc = timeline.to_dict()
    assert doc["chunk_ms"] == 500 and doc["chunk_ms_requested"] == 800
    plain = InputTimeline()
    plain.set_unit_grid(UnitGrid())
    plain.describe_stream(chunk_ms=200, media_origin_ms=0)
    assert plain.to_dict()["chunk_ms"] == 200 and "chunk_ms_requested" not in plain.to_dict()
