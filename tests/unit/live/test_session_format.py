"""Live capture in the session's input format, and the presets of commit-free sessions."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import numpy as np
import pytest

from duplex_client.framing.live import LiveFramer
from duplex_client.framing.pcm_format import PcmFormat
from duplex_client.framing.plan import FramerConfig
from duplex_client.framing.units import UnitGrid
from duplex_client.media.devices.capture import SILENCE_DBFS, AudioBlock, level_dbfs
from duplex_client.media.devices.filemic import FileMicrophone
from duplex_client.media.devices.mic import Microphone
from duplex_client.media.resample import Resampler, as_float
from duplex_client.run.options import RunOptions
from duplex_client.usage import UsageError
from tests.support.media_files import tone, write_audio_file
from tests.unit.framing.fakes import FakeClock
from tests.unit.live.fakes import FakeSoundDevice

F32_24K = PcmFormat("pcm_f32le", 24000)


def pcm16(seconds: float, rate: int, hz: float) -> bytes:
    return (tone(seconds, rate, hz, 1).T * 32767).astype("<i2").tobytes()


async def test_microphone_delivers_24k_float_through_the_resampler() -> None:
    source = pcm16(0.5, 16000, 440)
    sd = FakeSoundDevice(pcm=source, pace=None)  # takes 16 kHz only
    mic = Microphone(sd=sd, block_ms=20)
    mic.set_output(F32_24K)
    await mic.start()
    stream = sd.inputs[0]
    assert stream.samplerate == 16000  # 24 kHz was refused: the device rate, resampled
    stream.feed(500)
    blocks = [await asyncio.wait_for(mic.read(), 2) for _ in range(25)]
    assert all(b is not None and b.fmt == F32_24K for b in blocks)
    got = b"".join(b.pcm for b in blocks if b is not None)
    want = Resampler(16000, 24000, dtype=np.float32).process(
        as_float(np.frombuffer(source, dtype="<i2"))
    )
    assert got == want.astype("<f4").tobytes()
    last = blocks[-1]
    assert last is not None and last.end_sample == len(got) // 4
    assert mic.info()["duration_ms"] == len(got) // 4 * 1000 // 24000
    assert mic.level_dbfs > -20
    await mic.close()


async def test_microphone_opens_at_the_session_rate_when_the_device_takes_it() -> None:
    sd = FakeSoundDevice(pcm=pcm16(0.2, 24000, 300), rate=24000, pace=None)
    mic = Microphone(sd=sd)
    mic.set_output(F32_24K)
    await mic.start()
    assert sd.inputs[0].samplerate == 24000
    sd.inputs[0].feed(100)
    block = await asyncio.wait_for(mic.read(), 2)
    assert block is not None and block.samples == 480 and len(block.pcm) == 480 * 4
    with pytest.raises(RuntimeError, match="before start"):  # blocks already in one format
        mic.set_output(PcmFormat())
    await mic.close()


async def test_file_microphone_decodes_to_the_session_format(tmp_path: Path) -> None:
    wav = write_audio_file(tmp_path / "a.wav", 0.1, 16000, 300)
    clock = FakeClock()
    mic = FileMicrophone(wav, block_ms=20, clock=clock.now, sleep=clock.sleep)
    mic.set_output(F32_24K)
    await mic.start()
    assert mic.block_samples == 480
    blocks = [await mic.read() for _ in range(6)]
    assert [b.start_sample for b in blocks if b] == [480 * i for i in range(6)]
    assert all(b is not None and len(b.pcm) == 480 * 4 for b in blocks)
    assert blocks[-1] is not None and blocks[-1].pcm == bytes(480 * 4)  # silence after it
    info = mic.info()
    assert info["duration_ms"] == 100 and info["kind"] == "wav"


def test_level_meter_reads_float_and_int16_alike() -> None:
    x = tone(0.1, 16000, 440, 1)[0] * 0.5  # amplitude 0.15
    as16 = (x * 32767).astype("<i2").tobytes()
    as32 = x.astype("<f4").tobytes()
    assert level_dbfs(as32, F32_24K) == pytest.approx(level_dbfs(as16), abs=0.01)
    assert level_dbfs(as32, F32_24K) == pytest.approx(20 * math.log10(0.15 / math.sqrt(2)), abs=0.1)
    assert level_dbfs(bytes(400), F32_24K) == SILENCE_DBFS
    block = AudioBlock(as32, 0, 0.0, fmt=PcmFormat("pcm_f32le", 16000))
    assert block.samples == 1600 and block.duration_s == pytest.approx(0.1)


def test_live_framer_cuts_float32_on_the_80ms_grid() -> None:
    grid = UnitGrid(first_unit_ms=80, chunk_period_ms=80, sample_rate_hz=24000)
    framer = LiveFramer(FramerConfig(grid=grid, chunk_ms=200, sample_width=4))
    out = framer.push(bytes(1000 * 4), upload=True)  # 1000 samples: no unit yet
    assert out == [] and framer.media_samples == 1000
    out = framer.push(bytes(3000 * 4), upload=True)  # 4000 samples: two 1920-sample units
    assert [len(a.pcm) for a in out] == [1920 * 4, 1920 * 4]
    assert [a.unit_index for a in out] == [0, 1]
    with pytest.raises(ValueError, match="whole 4-byte samples"):
        framer.push(bytes(6), upload=True)


@pytest.mark.parametrize("preset", ["personaplex", "nemotron"])
@pytest.mark.parametrize("turn", ["ptt", "vad"])
def test_commit_needing_turns_are_refused_on_commit_free_presets(preset: str, turn: str) -> None:
    with pytest.raises(UsageError, match=f"^turn {turn} .* the {preset} preset takes no") as e:
        RunOptions(preset=preset, turn=turn).validate(inputs="devices")  # type: ignore[arg-type]
    assert e.value.render().startswith(f"--turn {turn} ")  # the CLI names its flags
    assert e.value.render().endswith("takes no commits: use --turn model")
    RunOptions(preset=preset, turn="model").validate(inputs="devices")


def test_the_new_presets_configure_the_session() -> None:
    plex = RunOptions(preset="personaplex", instructions="be brief").session_config()
    assert (plex.input_audio_format, plex.input_sample_rate_hz) == ("pcm_f32le", 24000)
    assert plex.instructions == "be brief" and plex.turn_detection is None
    nemo = RunOptions(preset="nemotron").session_config()
    assert (nemo.input_audio_format, nemo.input_sample_rate_hz) == ("pcm_f32le", 16000)
    assert nemo.output_sample_rate_hz == 22050
    assert nemo.turn_detection is None
