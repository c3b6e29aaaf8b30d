"""The plan cache: a file's decoded PCM and sampled frames kept on disk, keyed by content.

`PlanCache` is the directory (location, size bound, LRU eviction, `info`, `clear`);
`cached_clip` wraps an opened clip's sources so a second run of the same file with the same
parameters costs only its sending. The key derivation and the entry format are the pure
`duplex_client.framing.plan_cache`.
"""

from duplex_client.media.plan_cache.sources import (
    CachedFrames,
    CachedPcm,
    cached_audio,
    cached_clip,
)
from duplex_client.media.plan_cache.speech import cached_speech
from duplex_client.media.plan_cache.store import (
    DEFAULT_MAX_MB,
    ENV_DIR,
    ENV_MAX_MB,
    ENV_SWITCH,
    CacheInfo,
    PlanCache,
    default_dir,
    enabled_by_env,
    max_bytes_from_env,
)

__all__ = [
    "DEFAULT_MAX_MB",
    "ENV_DIR",
    "ENV_MAX_MB",
    "ENV_SWITCH",
    "CacheInfo",
    "CachedFrames",
    "CachedPcm",
    "PlanCache",
    "cached_audio",
    "cached_clip",
    "cached_speech",
    "default_dir",
    "enabled_by_env",
    "max_bytes_from_env",
]
