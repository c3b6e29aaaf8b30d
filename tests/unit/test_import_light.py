"""`import duplex_client` must stay light: no media, device or model libraries."""

import subprocess
import sys

HEAVY = (
    "av",
    "cv2",
    "sounddevice",
    "onnxruntime",
    "soundfile",
    "pocketsphinx",
    "websockets",
    "httpx",
)


def test_import_does_not_pull_heavy_modules() -> None:
    code = (
        "import sys, duplex_client, duplex_client.protocol, duplex_client.framing;"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
