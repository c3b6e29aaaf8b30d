"""G.711 encoding of a session's input PCM (for a `g711_ulaw`/`g711_alaw` input format)."""

from __future__ import annotations


def encode_g711(pcm: bytes, audio_format: str, sample_rate_hz: int) -> bytes:
    """PCM16 as G.711 for a `g711_ulaw`/`g711_alaw` session (the media layer's codec, PyAV)."""
    from duplex_client.media.g711 import encode

    return encode(pcm, audio_format, sample_rate_hz)
