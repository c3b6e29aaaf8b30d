"""Which options belong to which kind of input: files, live devices, a browser's page."""

from __future__ import annotations

#: Options of a run from files (refused on a live run).
FILE_FIELDS = frozenset(
    {
        "input_video", "input_audio", "input_image", "video_fps", "stack_frames",
        "tail_silence_s", "soundtrack", "realtime", "annotations", "plan_cache",
        "plan_cache_dir",
    }
)  # fmt: skip
#: Options of a run from live devices (refused on a file run).
DEVICE_FIELDS = frozenset(
    {
        "mic", "mic_file", "no_mic", "camera", "camera_file", "no_camera", "speaker",
        "no_playback", "echo_gate", "start_muted", "camera_off", "jitter_ms", "duration_s",
        "actions", "turn", "ptt_mode",
    }
)  # fmt: skip
#: Device options a browser run leaves to its page (refused there): the page chooses the
#: microphone, camera and speaker, and its talk button is held (press, release).
PAGE_FIELDS = frozenset(
    {
        "mic", "mic_file", "no_mic", "camera", "camera_file", "no_camera", "speaker",
        "no_playback", "ptt_mode",
    }
)  # fmt: skip
