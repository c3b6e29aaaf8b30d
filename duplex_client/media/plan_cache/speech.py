"""User speech found by voice activity, kept in the plan cache by the content of the input.

A file run's turns need the user-speech segments of the input it sent (Silero VAD over the
whole input, `media.speech.detect_speech`). They depend only on that PCM, the model and the
code, so a run that sent the same input again reads them back instead of scoring it again.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from duplex_client.analysis.annotations import SpeechSegment
from duplex_client.framing.plan_cache import plan_key
from duplex_client.media.plan_cache.sources import code_fingerprint
from duplex_client.media.plan_cache.store import PlanCache


@functools.cache
def _model_fingerprint() -> dict[str, str]:
    """The VAD model file's sha256 and the onnxruntime version (`VadUnavailable` without it)."""
    from duplex_client.media.vad import SEQUENCE_MODEL_PATH, load_onnxruntime

    ort = load_onnxruntime()
    digest = hashlib.sha256(SEQUENCE_MODEL_PATH.read_bytes()).hexdigest()
    return {"model": digest, "onnxruntime": str(getattr(ort, "__version__", "?"))}


def cached_speech(cache: PlanCache, pcm: Any) -> list[SpeechSegment]:
    """`detect_speech(pcm)` (16 kHz int16 samples), read from `cache` when it holds it."""
    import numpy as np

    from duplex_client.media.speech import detect_speech

    samples = np.ascontiguousarray(pcm, dtype="<i2")
    params = {
        "pcm_sha256": hashlib.sha256(samples.tobytes()).hexdigest(),
        **_model_fingerprint(),
        "code": code_fingerprint(),
    }
    key = plan_key("speech", params)
    hit = cache.load("speech", key)
    if hit is not None:
        rows = json.loads(bytes(hit[1]))
        return [SpeechSegment(float(start), float(end)) for start, end in rows]
    found = detect_speech(samples)
    payload = json.dumps([[s.start_ms, s.end_ms] for s in found]).encode()
    cache.store("speech", key, {}, payload)
    return found
