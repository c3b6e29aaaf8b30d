"""`import duplex_client.media` must not import PyAV, OpenCV or soundfile."""

import subprocess
import sys

HEAVY = ("av", "cv2", "soundfile", "sounddevice", "numpy")


def test_media_import_is_light() -> None:
    code = (
        f"import sys, duplex_client.media;print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
