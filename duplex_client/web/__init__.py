"""`duplex-cli web`: talk to the model from a browser, recorded and measured like every run.

One process serves a page and its same-origin socket (`WebApp`); each session the page
starts is the one run (`run_session`) with a `BrowserSource`: the page's microphone and
camera as the capture, its AudioWorklet player as the listener. docs/web.md has the details.
"""

from duplex_client.web.server import WebApp, WebConfig
from duplex_client.web.source import BrowserSource, offered_modes

__all__ = ["BrowserSource", "WebApp", "WebConfig", "offered_modes"]
