"""Omni-DuplexEval: read its published splits as eval items, export timed-sentence responses."""

from duplex_client.eval.omni_duplexeval.dataset import (
    PR_SPLITS,
    RTD_SPLITS,
    family_of,
    is_omni_duplexeval_dataset,
    media_cache_dir,
    read_omni_duplexeval_items,
)
from duplex_client.eval.omni_duplexeval.export import (
    BATCH_FILES,
    CaseExport,
    export_case,
    ref_audio_sha256,
    write_batch,
)
from duplex_client.eval.omni_duplexeval.sentences import (
    TimedSentence,
    split_sentences,
    timed_sentences,
)

__all__ = [
    "BATCH_FILES",
    "PR_SPLITS",
    "RTD_SPLITS",
    "CaseExport",
    "TimedSentence",
    "export_case",
    "family_of",
    "is_omni_duplexeval_dataset",
    "media_cache_dir",
    "read_omni_duplexeval_items",
    "ref_audio_sha256",
    "split_sentences",
    "timed_sentences",
    "write_batch",
]
