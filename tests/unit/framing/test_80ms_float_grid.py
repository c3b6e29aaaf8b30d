"""PersonaPlex-style framing: 80 ms units of 24 kHz float32 PCM (pure framing, fake time)."""

from __future__ import annotations

import numpy as np

from duplex_client.client.streaming import stream
from duplex_client.framing import BytesPcmSource
from duplex_client.framing.framer import Framer
from duplex_client.framing.pcm_format import PcmFormat
from duplex_client.framing.plan import FramerConfig
from duplex_client.protocol.capabilities import Capabilities, UnitKind
from tests.unit.framing.fakes import FakeClock, FakeTarget

PERSONAPLEX_CAPS = Capabilities.from_dict(
    {
        "first_unit_ms": 80,
        "chunk_period_ms": 80,
        "required_input_modalities": ["audio"],
        "optional_input_modalities": [],
    }
)
F32_24K = PcmFormat("pcm_f32le", 24000)


def f32(seconds: float, rate: int = 24000) -> bytes:
    """A tone as float32 LE PCM (never all zeros, so slicing mistakes show)."""
    t = np.arange(round(seconds * rate)) / rate
    return (0.25 * np.sin(2 * np.pi * 220 * t) + t / 1000).astype("<f4").tobytes()


def test_sixty_seconds_make_750_units_of_1920_float_samples() -> None:
    pcm = f32(60.0)
    config = FramerConfig.from_capabilities(PERSONAPLEX_CAPS, chunk_ms=200, pcm=F32_24K)
    assert config.grid.sample_rate_hz == 24000 and config.sample_width == 4
    appends = list(Framer(config).plan(BytesPcmSource(pcm, chunk_bytes=96_000)))
    assert len(appends) == 750
    assert all(a.unit_kind is UnitKind.AUDIO for a in appends)
    assert [a.unit_index for a in appends] == list(range(750))
    assert {len(a.pcm) for a in appends} == {1920 * 4}
    assert {a.samples for a in appends} == {1920}
    assert [a.media_end_ms for a in appends] == [80 * (k + 1) for k in range(750)]
    assert appends[-1].audio_end_ms == 60_000
    assert b"".join(a.pcm for a in appends) == pcm  # every sample, in order, untouched


class FloatTarget(FakeTarget):
    """A fake session whose input format is 24 kHz float32 (as the personaplex preset's)."""

    @property
    def input_pcm_format(self) -> PcmFormat:
        return F32_24K

    @property
    def audio_end_ms(self) -> int:
        return sum(len(s.pcm) for s in self.appends) // 4 * 1000 // 24000


async def test_realtime_pacing_releases_each_80ms_append_at_its_media_end() -> None:
    fake = FakeClock()
    target = FloatTarget(fake, capabilities=PERSONAPLEX_CAPS, cost_s=0.002)
    result = await stream(
        target, f32(60.0), realtime=True, now=fake.now, sleep=fake.sleep, commit=False
    )
    sent = target.appends
    assert len(sent) == 750 and result.commit_event_id is None
    t0 = result.clock.t0
    late_ms = [(s.at - t0) * 1000 - s.fields["media_end_ms"] for s in sent]
    # Never early; a 2 ms send cost never accumulates over 750 appends (absolute deadlines).
    assert min(late_ms) >= -0.5 and max(late_ms) < 3.0
    assert abs(late_ms[-1]) < 3.0
