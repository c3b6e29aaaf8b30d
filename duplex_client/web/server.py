"""`WebApp`: one process serving the page and its same-origin socket on one port.

The page and its scripts, the socket the page talks through (`web.page`) and each finished
session's report page, all on `websockets`' server (HTTP through `process_request`): no other
web framework (docs/web.md says why). One page at a time holds the socket; a second tab is
told so and closed. The API key and the reference voice stay in this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

from duplex_client.bundle.layout import REPORT_FILE
from duplex_client.run.options import RunOptions
from duplex_client.web.http import PAGE_CSP, STATIC, Guard, response, static_file, text
from duplex_client.web.page import PageConnection

log = logging.getLogger("duplex_client.web")
_REPORT = re.compile(r"/runs/(\d+)/report\.html")
#: Messages the socket takes: media blocks are small, a camera frame at 640 px is ~60 kB.
MAX_MESSAGE = 4 * 1024 * 1024


@dataclass
class WebConfig:
    """What `duplex-cli web` serves: the model endpoint and the options of every session."""

    #: The model endpoint (None: an embedded reference server per session).
    url: str | None
    #: The options of every session (the page chooses the turn mode and the devices).
    options: RunOptions = field(default_factory=RunOptions)
    host: str = "127.0.0.1"
    port: int = 0
    #: Where each session's bundle goes (`<output_dir>/<time>`; None: `runs/<time>`).
    output_dir: Path | None = None


class WebApp:
    """Serves the page (see the module docstring); `async with WebApp(config) as app:`.

    `say` gets one line per thing the terminal shows (the URL is `app.page_url`): session
    states, `bundle: <dir>`, what the page reported going wrong.
    """

    def __init__(
        self,
        config: WebConfig,
        *,
        say: Callable[[str], None] | None = None,
        token: str | None = None,
    ) -> None:
        self.config = config
        self.say = say or (lambda line: log.info("%s", line))
        self.token = token or secrets.token_urlsafe(16)
        self.page: PageConnection | None = None
        #: Every session's bundle directory, by session number (from 1).
        self.bundles: dict[int, Path] = {}
        self.sessions = 0
        self._server: Server | None = None
        self._port = config.port
        self._guard = Guard(self.token, config.host, config.port)
        self._files = {path: static_file(name) for path, (name, _) in STATIC.items()}
        self._stopped = asyncio.Event()

    # --- lifecycle ---

    async def start(self) -> None:
        """Bind and serve (port 0 picks a free port).

        `dialect` `auto` is resolved first, once (said through `say` when not duplex): the
        page's rates and camera follow the wire every session then speaks.
        """
        from duplex_client.run.dialect import with_dialect

        options = await with_dialect(self.config.url, self.config.options, self.say)
        self.config = dataclasses.replace(self.config, options=options)
        self._server = await serve(
            self._handle,
            self.config.host,
            self.config.port,
            compression=None,
            max_size=MAX_MESSAGE,
            process_request=self._process_request,
            ping_interval=20,
            ping_timeout=20,
            close_timeout=2,
        )
        self._port = self._server.sockets[0].getsockname()[1]
        self._guard.port = self._port

    async def stop(self) -> None:
        """Stop the page's session (its bundle is finished), then serving."""
        if self.page is not None:
            await self.page.shutdown()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> WebApp:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # --- addresses ---

    @property
    def port(self) -> int:
        """The bound port."""
        return self._port

    @property
    def origin(self) -> str:
        """`http://host:port` (a wildcard bind is shown as 127.0.0.1)."""
        host = self.config.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self._port}"

    @property
    def page_url(self) -> str:
        """The page's URL with the per-launch token (in the fragment: never sent in requests)."""
        return f"{self.origin}/#token={self.token}"

    def report_path(self, number: int) -> str:
        """The path of session `number`'s report page (with the token)."""
        return f"/runs/{number}/report.html?token={self.token}"

    def next_bundle_dir(self) -> Path:
        """A new session's bundle directory (`<output_dir>/<time>`, or `runs/<time>`)."""
        from duplex_client.run.options import default_run_dir

        default = default_run_dir()
        base = self.config.output_dir
        if base is None:
            return default
        path, n = base / default.name, 1
        while path.exists():
            n += 1
            path = base / f"{default.name}-{n}"
        return path

    # --- HTTP ---

    async def _process_request(self, conn: ServerConnection, request: Request) -> Response | None:
        if not self._guard.host_allowed(request):
            return text(421, "this server answers to 127.0.0.1 and localhost only")
        path = request.path.partition("?")[0]
        if path in self._files:
            name, kind = STATIC[path]
            extra = (("Content-Security-Policy", PAGE_CSP),) if name == "index.html" else ()
            return response(200, self._files[path], kind, extra=extra)
        if path == "/health":
            return text(200, "ok")
        if path == "/ws":
            if not self._guard.token_ok(request.path):
                self.say("refused a page socket: wrong or missing token")
                return text(403, "wrong or missing token: open the URL the terminal printed")
            if not self._guard.origin_ok(request):
                origin = request.headers.get("Origin", "none")
                self.say(f"refused a page socket from another origin ({origin})")
                return text(403, "this socket takes only its own page's origin")
            return None
        match = _REPORT.fullmatch(path)
        if match is not None:
            return await self._report(int(match.group(1)), request)
        return text(404, "not found")

    async def _report(self, number: int, request: Request) -> Response:
        if not self._guard.token_ok(request.path):
            return text(403, "wrong or missing token")
        bundle = self.bundles.get(number)
        if bundle is None:
            return text(404, f"no session {number}")
        page = bundle / REPORT_FILE
        try:
            if not page.exists():
                from duplex_client.report.run_page import write_run_report

                await asyncio.to_thread(write_run_report, bundle, page)
            body = await asyncio.to_thread(page.read_bytes)
        except ImportError as exc:
            return text(500, f"the report needs the report extra ({exc.name} is missing)")
        except Exception as exc:
            return text(500, f"cannot render the report: {type(exc).__name__}: {exc}")
        return response(200, body, "text/html; charset=utf-8")

    # --- the page's socket ---

    async def _handle(self, ws: ServerConnection) -> None:
        if self.page is not None and not self.page.closed:
            self.say("refused a second tab: the page is open in another tab")
            with contextlib.suppress(Exception):
                await ws.send(_busy())
                await ws.close(4409, "open in another tab")
            return
        page = PageConnection(self, ws)
        self.page = page
        try:
            await page.run()
        finally:
            if self.page is page:
                self.page = None

    def new_session(self) -> int:
        """The number of a new session (from 1)."""
        self.sessions += 1
        return self.sessions


def _busy() -> str:
    import orjson

    message = "this page is open in another tab: close that tab (or stop it) and reload this one"
    doc: dict[str, Any] = {"type": "error", "message": message, "fatal": True}
    return orjson.dumps(doc).decode()
