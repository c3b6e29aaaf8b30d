"""Full-Duplex-Bench: read its sample trees as eval items, export `output.wav` for its scorers."""

from duplex_client.eval.fdb.export import OUTPUT_RATE_HZ, ExportOutcome, export_item
from duplex_client.eval.fdb.figures import FDB_EXPORT_KEY, export_turns, fdb_export_figures
from duplex_client.eval.fdb.tree import (
    ANNOTATION_FILES,
    COMPANION_INPUTS,
    INPUT_FILE,
    MAX_DEPTH,
    OUTPUT_DERIVED_FILES,
    OUTPUT_FILE,
    PAUSE_FILE,
    TRANSCRIPTION_FILE,
    is_fdb_tree,
    read_fdb_items,
)

__all__ = [
    "ANNOTATION_FILES",
    "COMPANION_INPUTS",
    "FDB_EXPORT_KEY",
    "INPUT_FILE",
    "MAX_DEPTH",
    "OUTPUT_DERIVED_FILES",
    "OUTPUT_FILE",
    "OUTPUT_RATE_HZ",
    "PAUSE_FILE",
    "TRANSCRIPTION_FILE",
    "ExportOutcome",
    "export_item",
    "export_turns",
    "fdb_export_figures",
    "is_fdb_tree",
    "read_fdb_items",
]
