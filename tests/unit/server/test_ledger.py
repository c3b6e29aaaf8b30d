"""The server's input ledger: accepted appends as §10 rows, bounded, light on the collector."""

from __future__ import annotations

import gc

from duplex_client.protocol.capabilities import UnitKind
from duplex_client.server.assembler import FramePack, Unit
from duplex_client.server.inputs import ParsedAppend
from duplex_client.server.ledger import InputLedger


def unit(index: int) -> Unit:
    return Unit(index, UnitKind.OMNI, index, b"", None, True, index * 1000, index * 1000 + 1000)


def record(ledger: InputLedger, k: int, frames: int = 0) -> None:
    pack = FramePack(("QUJD",) * frames, tuple(f"{k:02x}{i}" for i in range(frames)))
    parsed = ParsedAppend(b"\0\0" * 3200, pack if frames else None, None, (3,) * frames)
    units = [unit(k)] if frames else []
    ledger.record_append(
        f"evt_{k}", units, parsed, duration_ms=200, audio_end_ms=(k + 1) * 200
    )  # fmt: skip


def test_rows_are_the_section_10_rows_of_the_latest_appends() -> None:
    ledger = InputLedger(id_cache=8, max_rows=2)
    for k in range(3):
        record(ledger, k, frames=k % 2)
    assert ledger.append_count == 3
    assert ledger.appends == (
        {"index": 1, "event_id": "evt_1", "unit_kind": "OMNI", "unit_index": 1,
         "audio_unit_index": 1, "duration_ms": 200, "audio_end_ms": 400, "is_speech": None,
         "frames": [{"sha256": "010", "bytes": 3}]},
        {"index": 2, "event_id": "evt_2", "unit_kind": None, "unit_index": None,
         "audio_unit_index": None, "duration_ms": 200, "audio_end_ms": 600, "is_speech": None,
         "frames": []},
    )  # fmt: skip
    ledger.appends[0]["frames"].clear()  # a reader's copy: the ledger keeps its rows
    assert ledger.appends[0]["frames"] == [{"sha256": "010", "bytes": 3}]


def test_kept_rows_add_nothing_the_collector_walks() -> None:
    ledger = InputLedger(id_cache=8, max_rows=20_000)
    gc.collect()
    before = len(gc.get_objects())
    for k in range(5000):
        record(ledger, k, frames=1)
    gc.collect()
    assert len(gc.get_objects()) - before < 1000  # dicts and lists: 10 000 or more
    assert len(ledger.appends) == 5000
