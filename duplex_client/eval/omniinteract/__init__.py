"""OmniInteract: read its dataset tree as eval items, export its runner's output contract."""

from duplex_client.eval.omniinteract.export import (
    BATCH_FILES,
    CASE_FILES,
    FAILED_FILE,
    OUTPUT_RATE_HZ,
    CaseExport,
    export_case,
    write_batch,
)
from duplex_client.eval.omniinteract.tree import (
    MAPPING_FILE,
    SUBSETS,
    OmniInteractCase,
    is_omniinteract_tree,
    output_name,
    read_omniinteract_items,
)

__all__ = [
    "BATCH_FILES",
    "CASE_FILES",
    "FAILED_FILE",
    "MAPPING_FILE",
    "OUTPUT_RATE_HZ",
    "SUBSETS",
    "CaseExport",
    "OmniInteractCase",
    "export_case",
    "is_omniinteract_tree",
    "output_name",
    "read_omniinteract_items",
    "write_batch",
]
