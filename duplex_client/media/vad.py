"""The Silero VAD model on onnxruntime: speech probabilities of 32 ms windows of 16 kHz audio.

One wrapper shared by the reference server's voice activity (`duplex_client.server.engine.vad`)
and the offline user-speech segments of a run's input (`duplex_client.media.speech`). The
model (MIT, see `server/engine/models/LICENSE-silero-vad`; the file stays in the server
package's data) scores 512-sample windows, each fed with the previous window's last 64
samples as context and the recurrent state carried over. onnxruntime is imported only when a
model is loaded, so importing this module costs numpy and nothing else.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

#: The rate the model works at.
SAMPLE_RATE_HZ: Final = 16000
MODEL_PATH: Final = Path(__file__).resolve().parent.parent / "server/engine/models/silero_vad.onnx"
WINDOW_SAMPLES: Final = 512
CONTEXT_SAMPLES: Final = 64
WINDOW_MS: Final = WINDOW_SAMPLES * 1000 // SAMPLE_RATE_HZ  # 32
#: The install hint of `VadUnavailable`.
VAD_EXTRA: Final = "duplex-client[vad]"

Samples = NDArray[np.float32]


class VadUnavailable(RuntimeError):
    """onnxruntime or the Silero model file is missing."""


def load_onnxruntime() -> Any:
    """The onnxruntime module, imported now; `VadUnavailable` when it is not installed."""
    try:
        import onnxruntime
    except ImportError as exc:
        raise VadUnavailable(f"Silero VAD needs onnxruntime: install {VAD_EXTRA}") from exc
    return onnxruntime


def pcm16_to_float(pcm: bytes | NDArray[Any]) -> Samples:
    """Mono PCM16 (LE bytes or an int16 array) or float samples as float32 in [-1, 1]."""
    if isinstance(pcm, bytes | bytearray | memoryview):
        data = bytes(pcm)
        if len(data) % 2:
            raise ValueError(f"PCM16 bytes must have an even length, got {len(data)}")
        return np.frombuffer(data, dtype="<i2").astype(np.float32) / np.float32(32768.0)
    array = np.asarray(pcm)
    if array.ndim != 1:
        raise ValueError(f"expected mono samples (a 1-D array), got shape {array.shape}")
    if array.dtype == np.int16:
        return array.astype(np.float32) / np.float32(32768.0)
    if np.issubdtype(array.dtype, np.floating):
        return array.astype(np.float32, copy=False)
    raise ValueError(f"expected int16 PCM or float samples, got dtype {array.dtype}")


class SileroModel:
    """The Silero graph in one single-threaded onnxruntime session, shared by all streams."""

    def __init__(self, path: Path = MODEL_PATH) -> None:
        ort = load_onnxruntime()
        if not path.is_file():
            raise VadUnavailable(f"Silero VAD model not found at {path}")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session: Any = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._rate = np.array(SAMPLE_RATE_HZ, dtype=np.int64)
        self._lock = threading.Lock()

    @staticmethod
    def initial_state() -> NDArray[np.float32]:
        """The recurrent state of a fresh stream."""
        return np.zeros((2, 1, 128), dtype=np.float32)

    def score(
        self, window: NDArray[np.float32], state: NDArray[np.float32]
    ) -> tuple[float, NDArray[np.float32]]:
        """Speech probability of one context+window input (576 samples) and the next state."""
        feed = {"input": window[None, :], "state": state, "sr": self._rate}
        with self._lock:
            prob, new_state = self._session.run(None, feed)
        return float(prob[0, 0]), new_state


_shared: SileroModel | None = None
_shared_lock = threading.Lock()


def shared_model() -> SileroModel:
    """The process-wide model, loaded on first use."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = SileroModel()
        return _shared


class VadStream:
    """One audio stream's model state: 16 kHz float samples in, one probability per window out."""

    def __init__(self, model: SileroModel | None = None) -> None:
        self.model = model or shared_model()
        self._state = SileroModel.initial_state()
        self._context = np.zeros(CONTEXT_SAMPLES, dtype=np.float32)
        self._pending = np.zeros(0, dtype=np.float32)

    def push(self, samples: Samples) -> NDArray[np.float32]:
        """Probabilities of every window completed by these samples (the rest is kept)."""
        data = np.concatenate([self._pending, samples.astype(np.float32, copy=False)])
        n = len(data) // WINDOW_SAMPLES
        probs = np.empty(n, dtype=np.float32)
        for i in range(n):
            window = data[i * WINDOW_SAMPLES : (i + 1) * WINDOW_SAMPLES]
            probs[i], self._state = self.model.score(
                np.concatenate([self._context, window]), self._state
            )
            self._context = window[-CONTEXT_SAMPLES:]
        self._pending = data[n * WINDOW_SAMPLES :].copy()
        return probs
