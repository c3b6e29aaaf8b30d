"""The Silero VAD model on onnxruntime: speech probabilities of 32 ms windows of 16 kHz audio.

The model (MIT, see `server/engine/models/LICENSE-silero-vad`; the files stay in the server
package's data) scores 512-sample windows, each fed with the previous window's last 64
samples as context and the recurrent state carried over. Two exports of it, both upstream's:
`SileroModel` scores one window a call, for streams scored as they arrive (the reference
server's voice activity, `duplex_client.server.engine.vad`); `SileroSequence` scores a whole
signal in a few calls, for the offline user-speech segments of a run's input
(`duplex_client.media.speech`), with the same probabilities, bit for bit, at about half the
CPU (one call per window cost more in the call than in the model). onnxruntime is imported
only when a model is loaded, so importing this module costs numpy and nothing else.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Final, TypeVar

import numpy as np
from numpy.typing import NDArray

#: The rate the model works at.
SAMPLE_RATE_HZ: Final = 16000
_MODELS: Final = Path(__file__).resolve().parent.parent / "server/engine/models"
MODEL_PATH: Final = _MODELS / "silero_vad.onnx"
#: The export that takes a run of windows (16 kHz only) and the LSTM's two halves of the state.
SEQUENCE_MODEL_PATH: Final = _MODELS / "silero_vad_16k_sequence.onnx"
#: Windows per call of the sequence export (16.4 s of audio: memory stays small on long inputs).
SEQUENCE_BLOCK_WINDOWS: Final = 512
WINDOW_SAMPLES: Final = 512
CONTEXT_SAMPLES: Final = 64
WINDOW_MS: Final = WINDOW_SAMPLES * 1000 // SAMPLE_RATE_HZ  # 32
#: The install hint of `VadUnavailable`.
VAD_EXTRA: Final = "duplex-client[vad]"

Samples = NDArray[np.float32]
_Model = TypeVar("_Model", "SileroModel", "SileroSequence")


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


def _single_threaded_session(path: Path) -> Any:
    """An onnxruntime session of the model at `path` on one CPU thread."""
    ort = load_onnxruntime()
    if not path.is_file():
        raise VadUnavailable(f"Silero VAD model not found at {path}")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


class SileroModel:
    """The Silero graph in one single-threaded onnxruntime session, shared by all streams."""

    def __init__(self, path: Path = MODEL_PATH) -> None:
        self._session: Any = _single_threaded_session(path)
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


class SileroSequence:
    """The Silero graph that scores a whole signal, a block of windows per call."""

    def __init__(self, path: Path = SEQUENCE_MODEL_PATH) -> None:
        self._session: Any = _single_threaded_session(path)

    def probabilities(self, samples: Samples) -> NDArray[np.float32]:
        """Speech probability of every window of 16 kHz `samples` (the last one zero-padded),
        from a fresh state: what `VadStream.push` gives window by window, bit for bit."""
        count = -(-len(samples) // WINDOW_SAMPLES)
        if count == 0:
            return np.zeros(0, dtype=np.float32)
        padded = np.zeros(CONTEXT_SAMPLES + count * WINDOW_SAMPLES, dtype=np.float32)
        padded[CONTEXT_SAMPLES : CONTEXT_SAMPLES + len(samples)] = samples
        # Window i with its context: padded[i * 512 : i * 512 + 576], a view (no copy).
        windows = np.lib.stride_tricks.sliding_window_view(
            padded, CONTEXT_SAMPLES + WINDOW_SAMPLES
        )[::WINDOW_SAMPLES]
        hidden = np.zeros((1, 1, 128), dtype=np.float32)
        cell = np.zeros((1, 1, 128), dtype=np.float32)
        out = np.empty(count, dtype=np.float32)
        # No lock: the state is this call's own, and onnxruntime runs one session from several
        # threads at once, so two inputs are scored on two cores.
        for first in range(0, count, SEQUENCE_BLOCK_WINDOWS):
            block = np.ascontiguousarray(windows[first : first + SEQUENCE_BLOCK_WINDOWS])
            probs, hidden, cell = self._session.run(None, {"input": block, "h": hidden, "c": cell})
            out[first : first + len(block)] = probs.reshape(-1)
        return out


_shared: dict[type[Any], Any] = {}
_shared_lock = threading.Lock()


def _loaded_once(kind: type[_Model]) -> _Model:
    with _shared_lock:  # held while loading: two first users never load it twice
        if kind not in _shared:
            _shared[kind] = kind()
        model: _Model = _shared[kind]
        return model


def shared_model() -> SileroModel:
    """The process-wide window-by-window model, loaded on first use."""
    return _loaded_once(SileroModel)


def shared_sequence_model() -> SileroSequence:
    """The process-wide whole-signal model, loaded on first use."""
    return _loaded_once(SileroSequence)


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
