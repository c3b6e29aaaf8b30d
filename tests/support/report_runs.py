"""Real run bundles for the report tests: two scripted runs of one clip that differ on purpose.

Run A answers unit 1 at once and unit 3; run B answers unit 1 400 ms later, answers unit 2
too and listens at unit 3. So their comparison has a moved latency, a unit decided
differently both ways, and an answer only in each.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from duplex_client.run.stream import stream_clip
from duplex_client.server.app import ReferenceServer
from duplex_client.server.engine.script import Script
from tests.support.media_files import write_clip

SCRIPT_A: dict[str, Any] = {
    "rules": [
        {"on": "unit", "index": 1, "do": "speak", "audio_ms": 800, "text": "first answer"},
        {"on": "unit", "index": 3, "do": "speak", "audio_ms": 600, "text": "second answer"},
        {"on": "commit", "do": "listen"},
    ],
    "defaults": {"unit": {"do": "listen"}},
}
SCRIPT_B: dict[str, Any] = {
    "rules": [
        {
            "on": "unit",
            "index": 1,
            "do": "speak",
            "audio_ms": 800,
            "text": "first answer",
            "delay_ms": 400,
        },
        {"on": "unit", "index": 2, "do": "speak", "audio_ms": 600, "text": "extra answer"},
        {"on": "commit", "do": "listen"},
    ],
    "defaults": {"unit": {"do": "listen"}},
}
#: The clip's user speech as an annotation: it ends at 900 ms, before unit 1 closes.
SPEECH = [{"start_ms": 100.0, "end_ms": 900.0}]


async def scripted_run(clip: Path, out: Path, script: dict[str, Any], **options: Any) -> Path:
    """Stream `clip` in real time to an in-process scripted server; returns the bundle dir."""
    import json

    annotations = out.parent / f"{out.name}_speech.json"
    annotations.write_text(json.dumps(SPEECH), encoding="utf-8")
    async with ReferenceServer(profile="minicpmo", script=Script.from_dict(script)) as server:
        result = await stream_clip(
            server.url,
            input_video=str(clip),
            tail_silence_s=0.5,
            annotations=str(annotations),
            output_dir=out,
            **options,
        )
    assert result.ok, result.error
    return out


def make_runs(root: Path, **options: Any) -> tuple[Path, Path]:
    """Bundles A and B (made concurrently) of one 4 s clip with audio and 2 fps video."""
    clip = write_clip(root / "clip.mp4", video_seconds=4.0, fps=10, audio_seconds=4.0)

    async def both() -> tuple[Path, Path]:
        a, b = await asyncio.gather(
            scripted_run(clip, root / "run_a", SCRIPT_A, **options),
            scripted_run(clip, root / "run_b", SCRIPT_B, **options),
        )
        return a, b

    return asyncio.run(both())
