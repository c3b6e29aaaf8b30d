"""What an item costs: frames decoded per sample from the keyframe index, and a measurement."""

from __future__ import annotations

from pathlib import Path

from duplex_client.eval import EvalItem
from duplex_client.eval.cost import SESSION_MS_PER_S, CostModel, decoded_frames
from duplex_client.run.options import RunOptions
from tests.support.media_files import write_audio_file, write_clip


def frames(n: int, fps: int = 30) -> list[float]:
    return [i / fps for i in range(n)]


def test_keyframes_on_the_sample_times_decode_one_frame_a_sample() -> None:
    pts = frames(600)
    keys = pts[::30]
    assert decoded_frames(pts, keys, [float(k) for k in range(20)]) == [1] * 20


def test_keyframes_drifting_from_the_sample_times_decode_from_the_keyframe_before() -> None:
    pts = frames(600)
    keys = pts[::29]  # 0, 29, 58, ...: sample k shows frame 30k, k mod 29 frames past a key
    counts = decoded_frames(pts, keys, [float(k) for k in range(20)])
    assert counts == [1] + [k % 29 + 1 for k in range(1, 20)]


def test_a_long_gop_decodes_on_from_the_previous_sample() -> None:
    pts = frames(600)
    keys = pts[::300]  # a keyframe every 10 s
    counts = decoded_frames(pts, keys, [float(k) for k in range(20)])
    assert counts == [1] + [30] * 9 + [1] + [30] * 9


def test_a_clip_costs_more_than_its_audio_and_each_kind_is_measured_once(tmp_path: Path) -> None:
    clip = write_clip(tmp_path / "c.mp4", video_seconds=3.0, fps=10, audio_seconds=3.0, keyint=7)
    wav = write_audio_file(tmp_path / "a.wav", 3.0, 16000, 440.0)
    model = CostModel(RunOptions(tail_silence_s=1.0))
    video = model.estimate(EvalItem("v", input_video=str(clip)))
    spent = model.spent_cpu_s
    again = model.estimate(EvalItem("v2", input_video=str(clip)))
    assert again == video and model.spent_cpu_s == spent  # known media: not measured again
    audio = model.estimate(EvalItem("a", input_audio=str(wav)))
    assert video.media_s == 4.0 and audio.media_s == 4.0  # the tail silence is streamed too
    assert audio.kind == "audio" and video.kind.endswith("h264")
    assert video.ms_per_s > audio.ms_per_s >= SESSION_MS_PER_S
    assert model.known(EvalItem("x", input_video=str(clip))) == video
    broken = model.estimate(EvalItem("b", input_video=str(tmp_path / "missing.mp4")))
    assert broken.kind == "unreadable"  # its own run says what is wrong


def test_the_machine_load_is_read_at_most_every_so_often() -> None:
    import time

    from duplex_client.eval.cost import MachineLoad

    load = MachineLoad(every_s=0.05)
    assert load.sample() is None  # too soon
    time.sleep(0.06)
    others = load.sample()
    assert others is not None and 0.0 <= others <= 1024


def test_the_cpu_of_this_process_helpers_is_not_counted_as_others_load() -> None:
    import subprocess
    import sys
    import time

    from duplex_client.eval.cost import MachineLoad

    # a helper that keeps a core busy for the whole reading, counted as this process's own
    helper = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        load = MachineLoad(every_s=0.0)
        spent = [0.0]

        def helpers() -> float:
            spent[0] += 1000.0  # far more than the machine could have been busy meanwhile
            return spent[0]

        load.helpers = helpers
        time.sleep(0.3)
        assert load.sample() == 0.0
    finally:
        helper.kill()
        helper.wait()
