"""A reference voice for `SessionConfig.ref_audio`: WAV bytes or files read and checked.

`SessionConfig` and `redact` are the pure core's (`duplex_client.protocol.session.config`);
they are re-exported here, where the run layer, presets and the CLI import them.
"""

from __future__ import annotations

from pathlib import Path

from duplex_client.protocol.codec import b64encode
from duplex_client.protocol.session.config import SECRET_SESSION_KEYS, SessionConfig, redact

__all__ = [
    "SECRET_SESSION_KEYS",
    "SessionConfig",
    "check_ref_audio",
    "redact",
    "ref_audio_data_url",
]

#: What libsndfile calls the WAV containers a `data:audio/wav` URL may carry.
_WAV_FORMATS = frozenset({"WAV", "WAVEX", "RF64"})


def ref_audio_data_url(source: str | Path | bytes) -> str:
    """A `data:audio/wav;base64,…` URL from WAV bytes, a WAV file path or an existing data URL.

    Bytes and files are decoded first: what is not a WAV with samples raises `ValueError`
    naming the file (never its content: a reference voice is a secret). A data URL is
    passed through as given.
    """
    if isinstance(source, bytes):
        check_ref_audio(source, "reference audio bytes")
        return "data:audio/wav;base64," + b64encode(source)
    text = str(source)
    if text.startswith("data:"):
        return text
    path = Path(text)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read reference audio ({exc.strerror or exc})") from None
    if not data:
        raise ValueError(f"{path}: reference audio file is empty")
    check_ref_audio(data, str(path))
    return "data:audio/wav;base64," + b64encode(data)


def check_ref_audio(data: bytes, name: str) -> None:
    """Raise `ValueError` unless `data` decodes as a WAV with samples (`name` in the message)."""
    import io

    import soundfile as sf

    try:
        info = sf.info(io.BytesIO(data))
    except Exception:  # libsndfile's reasons vary; none of them may quote the data
        raise ValueError(f"{name}: not a WAV audio file (cannot decode it as audio)") from None
    if info.format not in _WAV_FORMATS:
        raise ValueError(f"{name}: reference audio must be a WAV file, not {info.format}")
    if info.frames <= 0:
        raise ValueError(f"{name}: reference audio has no samples")
