"""The server and its engine package import without the model libraries."""

from __future__ import annotations

import subprocess
import sys

MODEL_LIBS = ("onnxruntime", "pocketsphinx", "espeakng_loader", "cv2", "av")


def test_server_and_engine_packages_do_not_load_model_libraries() -> None:
    code = (
        "import sys, duplex_client.server, duplex_client.server.engine,"
        " duplex_client.server.config, duplex_client.server.session;"
        f"print(','.join(m for m in {MODEL_LIBS!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
