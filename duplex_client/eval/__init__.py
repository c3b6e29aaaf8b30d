"""Batch evaluation: many clips against one or more endpoints, resumable, with a summary.

`run_eval("clips/", output_dir="evals/a", tail_silence_s=1)` runs every item and returns an
`EvalResult`; `duplex-cli eval` is a thin shell over it (docs/eval.md).
"""

from duplex_client.eval.api import EvalResult, run_eval, run_eval_async
from duplex_client.eval.item import EvalItem, ItemSetError
from duplex_client.eval.items import load_items, select_items
from duplex_client.eval.runner import EvalProgress
from duplex_client.eval.summary import EvalSummary, ItemRecord

__all__ = [
    "EvalItem",
    "EvalProgress",
    "EvalResult",
    "EvalSummary",
    "ItemRecord",
    "ItemSetError",
    "load_items",
    "run_eval",
    "run_eval_async",
    "select_items",
]
