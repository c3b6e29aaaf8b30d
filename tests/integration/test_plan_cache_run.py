"""The plan cache in real runs: a warm run sends byte for byte what a cold one sent, and an
eval's second round plans nothing (scripted reference server, real WebSockets, real PyAV)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from duplex_client.eval import EvalItem, run_eval_async
from duplex_client.run.stream import stream_clip
from duplex_client.server import ReferenceServer
from duplex_client.server.limits import Limits
from tests.support.media_files import write_clip

pytestmark = pytest.mark.timeout(120)
#: Row fields that are times or ids of this run, not what was sent.
_THIS_RUN = {"event_id", "scheduled_offset_ms", "sent_offset_ms", "lateness_ms"}
_THIS_RUN |= {"acknowledged_offset_ms"}


def _sent(run: Path) -> dict[str, Any]:
    """What a bundle says was sent, with the times and ids of the run left out."""
    doc = json.loads((run / "input_timeline.json").read_text())
    rows = [{k: v for k, v in row.items() if k not in _THIS_RUN} for row in doc["appends"]]
    doc = {k: v for k, v in doc.items() if k in ("audio_source", "video", "unit_grid", "totals")}
    doc["totals"] = {k: v for k, v in doc["totals"].items() if "late" not in k and k[-2:] != "ms"}
    files = {
        str(p.relative_to(run)): p.read_bytes()
        for folder in ("sent_frames", "frames")
        for p in sorted((run / folder).iterdir())
    }
    return {"rows": rows, "timeline": doc, "pcm": (run / "input.pcm").read_bytes(), **files}


async def test_a_warm_run_sends_what_the_cold_one_did_without_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clip = write_clip(tmp_path / "c.mp4", video_seconds=3.0, audio_seconds=3.0, keyint=7)
    common: dict[str, Any] = {
        "input_video": str(clip),
        "tail_silence_s": 0.4,
        "realtime": False,
        "keep_payloads": True,
        "stack_frames": 2,
        "plan_cache": True,
        "plan_cache_dir": str(tmp_path / "cache"),
    }
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        cold = await stream_clip(server.url, output_dir=tmp_path / "cold", **common)
        decoders = 0

        def count(*args: Any, **kwargs: Any) -> Any:
            nonlocal decoders
            decoders += 1
            return real(*args, **kwargs)

        real = __import__("duplex_client.media.frames", fromlist=["x"]).VideoCursor
        monkeypatch.setattr("duplex_client.media.frames.VideoCursor", count)
        warm = await stream_clip(server.url, output_dir=tmp_path / "warm", **common)
        monkeypatch.setattr("duplex_client.media.frames.VideoCursor", real)
        common.pop("plan_cache_dir")
        off = await stream_clip(
            server.url, output_dir=tmp_path / "off", **{**common, "plan_cache": False}
        )
    assert cold.ok and warm.ok and off.ok and decoders == 0
    assert cold.warnings == warm.warnings == []
    sent = _sent(tmp_path / "cold")
    assert sent["rows"] and any(row["frames"] for row in sent["rows"])
    assert _sent(tmp_path / "warm") == sent
    assert _sent(tmp_path / "off") == sent  # and the cache changes nothing at all


async def test_an_evals_second_round_plans_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clips = [
        write_clip(tmp_path / f"{name}.mp4", video_seconds=2.0, audio_seconds=2.0, tone_hz=hz)
        for name, hz in (("a", 500.0), ("b", 700.0))
    ]
    opened: list[str] = []
    real = __import__("duplex_client.media.frames", fromlist=["x"]).VideoCursor

    def count(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr("duplex_client.media.frames.VideoCursor", count)
    items = [EvalItem(c.stem, input_video=str(c)) for c in clips]
    limits = Limits(max_sessions=2)  # two at once: an item and its repeat could overlap
    async with ReferenceServer(profile="minicpmo", engine="scripted", limits=limits) as server:
        result = await run_eval_async(
            items,
            output_dir=tmp_path / "eval",
            urls=[server.url],
            concurrency=2,
            repeat=2,
            realtime=False,
            plan_cache=True,
            plan_cache_dir=str(tmp_path / "cache"),
        )
    assert result.summary["ok"] == 4
    # round 1 decodes each clip once; round 2 runs after it and decodes none
    assert sorted(opened) == [str(c) for c in clips]
    assert [r.id for r in result.items] == ["a", "a", "b", "b"]  # the summary's own order
    first = json.loads((tmp_path / "eval/items/a/1/input_timeline.json").read_text())
    second = json.loads((tmp_path / "eval/items/a/2/input_timeline.json").read_text())
    assert [r["frames"] for r in first["appends"]] == [r["frames"] for r in second["appends"]]
