"""The speech-engine tests need the `server` extra (onnxruntime, pocketsphinx, espeakng-loader)."""

from __future__ import annotations

import pytest

for _module in ("onnxruntime", "pocketsphinx", "espeakng_loader"):
    pytest.importorskip(
        _module, reason="needs the server extra: pip install 'duplex-client[server]'"
    )
