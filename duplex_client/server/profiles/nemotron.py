"""Nemotron VoiceChat-style: 80 ms frames in one continuous stream, drained at `session.close`."""

from __future__ import annotations

from dataclasses import replace

from duplex_client.server.profiles.base import family_profile

NEMOTRON = replace(
    family_profile("nemotron"),
    signal_sources=("model_native", "client_event"),
    # vLLM-Omni 0.30.0 `nemotron_voicechat/duplex/plugin.py` `PRIVATE_RUNTIME_CONFIG_KEYS`
    private_runtime_keys=frozenset(
        {
            "nvc_prompt_token_ids",
            "nvc_text_bos_id",
            "nvc_text_eos_id",
            "nvc_text_pad_id",
            "nvc_function_sotc_id",
            "nvc_function_eotc_id",
            "nvc_function_eotr_id",
            "nvc_max_model_len",
            "nvc_tokenizer_ref",
            "nvc_tools_signature",
            "nvc_function_response_generation",
            "nvc_function_response_batches",
        }
    ),
)
