"""One session end to end, whichever way in: `run_session(url, options, source)`.

The one pipeline of every run: check the options, name the model, load what they name,
open the source, prepare the bundle (everything that can be refused is refused before it
exists), start the embedded server when no URL is given, then `SessionRun`: connect, send
from the source, hear with its listener, finish the turn, close, record and judge.
`stream`, `live`, `eval` and `replay` differ only in the source they bring.
"""

from duplex_client.run.session_run.pipeline import open_bundle, run_session
from duplex_client.run.session_run.record import finish_regardless
from duplex_client.run.session_run.session import PACED_INPUTS, SessionRun
from duplex_client.run.session_run.target import embedded_profile, target_url, with_listed_model

__all__ = [
    "PACED_INPUTS",
    "SessionRun",
    "embedded_profile",
    "finish_regardless",
    "open_bundle",
    "run_session",
    "target_url",
    "with_listed_model",
]
