"""Without `model`, stream and live use the one model the server lists, and say so."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import respx

from duplex_client.client.http import AmbiguousModelError
from duplex_client.run.live import LiveDevices, run_live
from duplex_client.run.options import RunOptions
from duplex_client.run.stream import stream_clip
from duplex_client.server import ReferenceServer
from tests.integration.live.helpers import tone_pcm, write_wav
from tests.unit.live.fakes import FakeSoundDevice


def listing(router: respx.MockRouter, base: str, *names: str) -> None:
    router.get(f"{base}/v1/models").mock(
        return_value=httpx.Response(200, json={"data": [{"id": n} for n in names]})
    )
    router.route().pass_through()


async def test_stream_uses_the_only_listed_model_and_says_so(tmp_path: Path) -> None:
    wav = write_wav(tmp_path / "a.wav", tone_pcm(1000))
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        with respx.mock(assert_all_called=False) as router:
            listing(router, server.http_url, "org/only")
            result = await stream_clip(
                server.url, input_audio=str(wav), realtime=False, output_dir=tmp_path / "run"
            )
    assert result.ok, result.error
    assert result.model == "org/only"
    session = json.loads((tmp_path / "run" / "session.json").read_text())
    assert session["model"] == "org/only"
    assert any("org/only" in w and "/v1/models" in w for w in result.warnings)


async def test_a_given_model_is_used_without_asking(tmp_path: Path) -> None:
    wav = write_wav(tmp_path / "a.wav", tone_pcm(1000))
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        with respx.mock(assert_all_called=False) as router:
            listing(router, server.http_url, "a", "b")
            result = await stream_clip(
                server.url,
                input_audio=str(wav),
                model="mine",
                realtime=False,
                output_dir=tmp_path / "run",
            )
            asked = router.routes[0].called
    assert result.ok and result.model == "mine" and not asked


async def test_several_listed_models_is_a_usage_error_before_anything_is_written(
    tmp_path: Path,
) -> None:
    wav = write_wav(tmp_path / "a.wav", tone_pcm(1000))
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        with respx.mock(assert_all_called=False) as router:
            listing(router, server.http_url, "a", "b")
            with pytest.raises(AmbiguousModelError, match=r"lists 2 models \(a, b\)"):
                await stream_clip(server.url, input_audio=str(wav), output_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


async def test_without_a_listing_the_presets_model_is_sent(tmp_path: Path) -> None:
    wav = write_wav(tmp_path / "a.wav", tone_pcm(1000))
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        result = await stream_clip(  # the reference server has no /v1/models
            server.url, input_audio=str(wav), realtime=False, output_dir=tmp_path / "run"
        )
    assert result.ok and result.model == "openbmb/MiniCPM-o-4_5" and not result.warnings


async def test_live_uses_the_only_listed_model(tmp_path: Path) -> None:
    wav = write_wav(tmp_path / "a.wav", tone_pcm(1000))
    devices = LiveDevices(sounddevice=FakeSoundDevice(wav=wav, pace=4.0))
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        with respx.mock(assert_all_called=False) as router:
            listing(router, server.http_url, "org/only")
            result = await run_live(
                server.url,
                RunOptions(
                    mic_file=str(wav),
                    no_camera=True,
                    no_playback=True,
                    duration_s=0.5,
                    output_dir=tmp_path / "run",
                ),
                devices=devices,
            )
    assert result.model == "org/only"
    session = json.loads((tmp_path / "run" / "session.json").read_text())
    assert session["model"] == "org/only"
