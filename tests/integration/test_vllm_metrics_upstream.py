"""`result.json` → `metrics.vllm_omni` under upstream's names is vLLM-Omni 0.30.0's reading of
the run's own events, with and without the server's `response_request_metrics`.

Each run streams a clip in real time to the reference server (scripted engine, two spoken
responses); the bundle's `events.jsonl` is then fed, at its recorded media times, into the
tests' independent restatement of 0.30.0's rules (`tests/support/upstream_metrics.py`), and
every value reported under an upstream name must be the restatement's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from duplex_client.presets import minicpmo_4_5
from duplex_client.run.stream import stream_clip
from duplex_client.server import ReferenceServer, Script
from tests.integration.live.helpers import tone_pcm, write_wav
from tests.support.upstream_metrics import session_metrics

pytestmark = pytest.mark.slow

UPSTREAM_DISTRIBUTIONS = (
    "ttft_ms",
    "ttfp_ms",
    "rtf",
    "tpot_ms",
    "stream_ttft_ms",
    "stream_ttfp_ms",
    "stream_rtf",
)
EMPTY = {"count": 0, "mean": None, "p50": None, "p99": None}
SCRIPT = {
    "rules": [
        {"on": "unit", "index": 0, "do": "speak", "text": "one two", "audio_ms": 400},
        # Decided 500 ms after unit 1 closes (2000 ms): 300 ms after the input's last append.
        {
            "on": "unit",
            "index": 1,
            "do": "speak",
            "text": "three",
            "audio_ms": 300,
            "delay_ms": 500,
        },
    ],
    "defaults": {"unit": {"do": "listen"}, "commit": {"do": "listen"}},
}


async def _run(tmp_path: Path, name: str, *, server_metrics: bool) -> tuple[dict[str, Any], Path]:
    extra = {"auto_response": True, "native_duplex": True, "force_listen_count": 0}
    if server_metrics:
        extra["return_stage_metrics"] = True
    wav = write_wav(tmp_path / f"{name}.wav", tone_pcm(2200))
    async with ReferenceServer(
        profile="minicpmo", engine="scripted", script=Script.from_dict(SCRIPT)
    ) as server:
        result = await stream_clip(
            server.url,
            input_audio=str(wav),
            config=minicpmo_4_5(extra_body=extra),
            output_dir=tmp_path / name,
        )
    assert result.ok, result.error
    doc = json.loads((tmp_path / name / "result.json").read_text())
    return doc["metrics"]["vllm_omni"], tmp_path / name


def _events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def _assert_upstream_values(ours: dict[str, Any], upstream: dict[str, Any]) -> None:
    for name in UPSTREAM_DISTRIBUTIONS:
        assert ours[name] == (upstream[name] or EMPTY), name
    assert ours["audio_turn_count"] == upstream["audio_turn_count"]
    assert ours["output_tokens"]["total"] == upstream["output_tokens"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, tuple[dict[str, Any], Path]]:
    import asyncio

    tmp = tmp_path_factory.mktemp("vllm_metrics")

    async def both() -> dict[bool, tuple[dict[str, Any], Path]]:
        return {
            False: await _run(tmp, "plain", server_metrics=False),
            True: await _run(tmp, "server", server_metrics=True),
        }

    return asyncio.run(both())


def test_without_server_figures_ttft_and_ttfp_start_at_response_created(
    runs: dict[bool, tuple[dict[str, Any], Path]],
) -> None:
    ours, run = runs[False]
    upstream = session_metrics(_events(run))
    assert upstream["audio_turn_count"] == 2
    assert all("response_request_metrics" not in json.dumps(e) for e in _events(run))
    _assert_upstream_values(ours, upstream)
    # Upstream's fallback: from the receipt of response.created to the first audio delta.
    created: dict[str, float] = {}
    first_audio: dict[str, float] = {}
    for line in _events(run):
        rid = line["event"].get("response_id")
        if line["type"] == "response.created":
            created.setdefault(rid, line["media_ms"])
        elif line["type"] == "response.output_audio.delta":
            first_audio.setdefault(rid, line["media_ms"])
    gaps = sorted(round(first_audio[rid] - created[rid], 3) for rid in created)
    assert [ours["ttfp_ms"][k] for k in ("count", "p50", "p99")] == [2, *gaps]
    assert ours["server_ttft_ms"] == EMPTY
    # Our request-start figures keep their own meaning, under their own names.
    assert ours["request_ttfp_ms"]["count"] == 2
    assert ours["request_ttfp_ms"]["mean"] > ours["ttfp_ms"]["mean"] + 50


def test_with_server_figures_ttft_and_ttfp_are_the_servers(
    runs: dict[bool, tuple[dict[str, Any], Path]],
) -> None:
    ours, run = runs[True]
    upstream = session_metrics(_events(run))
    assert upstream["audio_turn_count"] == 2
    _assert_upstream_values(ours, upstream)
    done = [e["event"] for e in _events(run) if e["type"] == "response.done"]
    sent = [d["response"]["metadata"]["response_request_metrics"] for d in done]
    assert [row["ttfp_ms"] for row in upstream["rows"]] == [s["ttfp_ms"] for s in sent]
    assert ours["ttft_ms"] == ours["server_ttft_ms"] and ours["ttft_ms"]["count"] == 2
    assert ours["ttfp_ms"] == ours["server_ttfp_ms"]
    # The server's start is the append it accepted last before the response began: for the
    # second response, the input's last append (2200 ms), about 300 ms before it began.
    assert sent[1]["ttfp_ms"] > 100 and ours["ttfp_ms"]["p99"] == sent[1]["ttfp_ms"]


def test_audio_duration_is_the_servers_when_it_reports_one(
    runs: dict[bool, tuple[dict[str, Any], Path]],
) -> None:
    for server_metrics in (False, True):
        _, run = runs[server_metrics]
        upstream = session_metrics(_events(run))
        reported = {}
        for line in _events(run):
            meta = line["event"].get("metadata") or {}
            if line["type"] == "response.output_audio.delta":
                reported[line["event"]["response_id"]] = meta["audio_duration_ms"]
        assert [r["audio_duration_ms"] for r in upstream["rows"]] == list(reported.values())
