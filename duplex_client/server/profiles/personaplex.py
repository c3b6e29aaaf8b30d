"""PersonaPlex-style: continuous speech in, speech out on an 80 ms grid; 24 kHz float input."""

from __future__ import annotations

from dataclasses import replace

from duplex_client.server.profiles.base import family_profile

PERSONAPLEX = replace(
    family_profile("personaplex"),
    fixed_persona=True,
    fixed_voice=True,
    # vLLM-Omni 0.30.0 `personaplex/duplex/serving_adapter.py`
    signal_sources=("model_native", "client_event"),
    # its `_PRIVATE_RUNTIME_CONFIG_KEYS`: PersonaPlex is always model-native, so the
    # per-session opt-in (and its legacy spelling) is server-owned
    private_runtime_keys=frozenset(
        {
            "personaplex_prefill_slots",
            "personaplex_model_path",
            "native_duplex",
            "minicpmo45_native_duplex",
        }
    ),
)
