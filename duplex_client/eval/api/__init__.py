"""`run_eval`: an eval from a notebook or the CLI — items in, bundles and a summary out.

Exit codes: 0 every item ok; 1 an item failed, or every endpoint went down; 2 bad options
or input (nothing ran); 130 interrupted (the summary of what finished is written and the
eval resumes from the same output directory).
"""

from duplex_client.eval.api.record import changed_options
from duplex_client.eval.api.result import EvalResult
from duplex_client.eval.api.run import run_eval, run_eval_async
from duplex_client.eval.exports import EXPORTS

__all__ = ["EXPORTS", "EvalResult", "changed_options", "run_eval", "run_eval_async"]
