"""The frame sent for a sample time is exactly the frame a full decode shows then, pixel for pixel.

"The frame at t" is the last frame whose pts is at or before t. For each clip kind of issue 31
(GOP 0.5 s, 1 s on the sample times, 1 s off them (29 frames), 2 s, 10 s; with and without
B-frames; an open GOP) and a few sample rates (1 fps, 0.7 fps and 3 fps, which do not divide
the 30 fps frame rate evenly or at all), every frame `ClipFrames` hands to the JPEG encoder is
compared, as decoded YUV, with the frame a plain decode of every frame shows at that time.
The decoding stays within the cheapest exact cost: no more frames than the frames from the
last keyframe at or before each sample up to it, plus one look-ahead frame per sample.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from duplex_client.media.cursor import ShownFrame
from duplex_client.media.frames import ClipFrames
from tests.support.media_files import write_moving_clip

SIZE = (160, 90)
SECONDS = 4.0
FPS = 30

#: Clip kinds: keyframe interval in frames, B-frames, open GOP.
KINDS: dict[str, dict[str, Any]] = {
    "gop0.5s": {"keyint": 15},
    "gop0.5s_no_b": {"keyint": 15, "bframes": False},
    "gop1s_aligned": {"keyint": 30},
    "gop1s_aligned_no_b": {"keyint": 30, "bframes": False},
    "gop1s_not_aligned": {"keyint": 29},
    "gop1s_not_aligned_no_b": {"keyint": 29, "bframes": False},
    "gop2s": {"keyint": 60},
    "gop2s_no_b": {"keyint": 60, "bframes": False},
    "gop10s": {"keyint": 300},
    "gop10s_no_b": {"keyint": 300, "bframes": False},
    "gop1s_not_aligned_open": {"keyint": 29, "open_gop": True},
}
RATES = (1.0, 0.7, 3.0)


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every kind, written once for the module."""
    folder = tmp_path_factory.mktemp("exact")
    return {
        name: write_moving_clip(
            folder / f"{name}.mp4", size=SIZE, seconds=SECONDS, fps=FPS, **options
        )
        for name, options in KINDS.items()
    }


def full_decode(path: Path) -> tuple[list[Fraction], list[Any], list[tuple[Fraction, bool]]]:
    """Every frame's time and YUV planes by a plain decode, and the packets in decode order."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        tb = stream.time_base
        packets = [(Fraction(p.pts) * tb, p.is_keyframe) for p in container.demux(stream) if p.size]
        container.seek(0)
        frames = [(Fraction(f.pts) * tb, f.to_ndarray()) for f in container.decode(stream)]
    frames.sort(key=lambda f: f[0])
    return [t for t, _ in frames], [a for _, a in frames], packets


def shown_at(times: list[Fraction], t: Fraction) -> int:
    """Index of the frame at `t`: the last whose pts is at or before `t`."""
    return max((i for i, x in enumerate(times) if x <= t), default=0)


def sample_times(fps: float) -> list[Fraction]:
    """The sample grid k / fps inside the clip."""
    rate = Fraction(fps).limit_denominator(1_000_000)
    return [k / rate for k in range(math.ceil(Fraction(SECONDS) * rate))]


def sent_frames(path: Path, fps: float) -> tuple[list[ShownFrame], int]:
    """The frames `ClipFrames` encodes for units starting on each grid time, and its decodes."""
    sent: list[ShownFrame] = []
    with ClipFrames(path, fps=fps) as frames:
        encode = frames._encode_base

        def spy(shown: ShownFrame) -> Any:
            sent.append(shown)
            return encode(shown)

        frames._encode_base = spy  # type: ignore[method-assign]
        starts = [math.ceil(t * 1000) for t in sample_times(fps)]
        for start, stop in zip(starts, [*starts[1:], starts[-1] + 1000], strict=True):
            group = frames.group_for_unit(start, stop)
            assert group is not None and not group.held
        decoded = frames.decoded_frames
        assert not frames.decoder_open  # released once the last sample was taken
    return sent, decoded


def cheapest_cost(packets: list[tuple[Fraction, bool]], times: list[Fraction]) -> int:
    """Frames decoded by restarting at the last keyframe at or before each sample.

    For each sample, the packets in decode order from that keyframe through the last one
    shown by the sample; samples sharing a keyframe share the packets already decoded.
    """
    needed: set[int] = set()
    for t in times:
        last = max(i for i, (pts, _) in enumerate(packets) if pts <= t)
        key = max(i for i, (pts, kf) in enumerate(packets) if kf and pts <= t)
        needed.update(range(key, last + 1))
    return len(needed)


@pytest.mark.parametrize("fps", RATES)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_sampled_frame_is_the_full_decodes_frame(
    kind: str, fps: float, clips: dict[str, Path]
) -> None:
    path = clips[kind]
    times, planes, packets = full_decode(path)
    grid = sample_times(fps)
    sent, decoded = sent_frames(path, fps)
    assert len(sent) == len(grid)
    for t, shown in zip(grid, sent, strict=True):
        want = shown_at(times, t)
        assert shown.time == times[want], f"{kind} at {float(t):.3f} s: wrong frame"
        got = shown.frame.to_ndarray()
        assert got.shape == planes[want].shape
        assert np.array_equal(got, planes[want]), f"{kind} at {float(t):.3f} s: pixels differ"
    # Cheapest within exactness: at most the keyframe-to-sample frames plus one look-ahead
    # frame per sample (measured: one for the whole clip; skipped non-reference B-frames
    # often bring it below the bound).
    assert decoded <= cheapest_cost(packets, grid) + len(grid)


def test_decoder_released_after_the_last_sample(clips: dict[str, Path]) -> None:
    # 0.7 fps in a 4 s clip: grid frames at 0, 1.43 and 2.86 s; the 4.29 s one is past the end.
    with ClipFrames(clips["gop1s_not_aligned"], fps=0.7) as frames:
        groups = {s: frames.group_for_unit(s, s + 500) for s in (0, 1500, 2900)}
        assert not frames.decoder_open  # the file, decoder and its frames are gone
        decoded = frames.decoded_frames
        later = {s: frames.group_for_unit(s, s + 500) for s in (3500, 4000, 6000)}
        assert not frames.decoder_open and frames.decoded_frames == decoded
        last = groups[2900]
        assert last is not None and not last.held and last.base.pts_ms == 2833  # frame 85
        assert [(g.base, g.held) for g in later.values() if g] == [
            (last.base, False),
            (last.base, True),
            (last.base, True),
        ]
        again = frames.group_for_unit(0, 500)  # an earlier start decodes again from the top
        assert again is not None and again.base == groups[0].base  # type: ignore[union-attr]
        assert frames.decoder_open


def test_b_frame_kinds_have_reference_b_frames(clips: dict[str, Path]) -> None:
    # So the exactness above covers B-pyramid: B-frames that NONREF skipping must still decode.
    def b_frames(skip: str) -> int:
        with av.open(str(clips["gop2s"])) as container:
            stream = container.streams.video[0]
            stream.codec_context.skip_frame = skip
            return sum(
                f.pict_type == av.video.frame.PictureType.B for f in container.decode(stream)
            )

    assert 0 < b_frames("NONREF") < b_frames("DEFAULT")
