"""What the page's HTTP side serves and refuses: files, headers, the token and origin checks.

Pure request logic over websockets' `Request`/`Response` types (the server in `web.server`
answers with them): the page and its scripts from the package (no build step, no CDN), the
per-launch token and the same-origin check the socket needs, and the Host check that keeps
a loopback server from answering under another name (DNS rebinding).
"""

from __future__ import annotations

import email.utils
import hmac
import http
import ipaddress
from importlib import resources
from typing import Final
from urllib.parse import parse_qs, urlsplit

from websockets.datastructures import Headers, MultipleValuesError
from websockets.http11 import Request, Response

#: The page's files, by URL path → (file in `duplex_client/web/static`, content type).
STATIC: Final = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/media.js": ("media.js", "text/javascript; charset=utf-8"),
    "/static/capture-worklet.js": ("capture-worklet.js", "text/javascript; charset=utf-8"),
    "/static/player-worklet.js": ("player-worklet.js", "text/javascript; charset=utf-8"),
    "/static/style.css": ("style.css", "text/css; charset=utf-8"),
}
#: The page may talk to its own origin only; scripts are files, never inline.
PAGE_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
    "media-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
LOOPBACK_NAMES: Final = ("localhost",)


def static_file(name: str) -> bytes:
    """A file of the page, from the installed package."""
    return resources.files("duplex_client.web").joinpath("static", name).read_bytes()


def response(
    status: int,
    body: bytes,
    content_type: str = "text/plain; charset=utf-8",
    *,
    extra: tuple[tuple[str, str], ...] = (),
) -> Response:
    """An HTTP response with the page's safety headers (nothing cached, no referrer)."""
    code = http.HTTPStatus(status)
    headers = Headers(
        [
            ("Date", email.utils.formatdate(usegmt=True)),
            ("Connection", "close"),
            ("Content-Length", str(len(body))),
            ("Content-Type", content_type),
            ("Cache-Control", "no-store"),
            ("Referrer-Policy", "no-referrer"),
            ("X-Content-Type-Options", "nosniff"),
            *extra,
        ]
    )
    return Response(code.value, code.phrase, headers, body)


def text(status: int, message: str) -> Response:
    """A short plain-text answer."""
    return response(status, (message + "\n").encode())


def is_loopback(host: str) -> bool:
    """Whether `host` (a bind address or a name) only reaches this machine."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host in LOOPBACK_NAMES


class Guard:
    """The per-launch token, and which Host and Origin headers a request may carry.

    Bound to loopback, only `127.0.0.1`, `localhost` and `[::1]` at the bound port are
    answered (another name pointing here is a DNS-rebinding page). The socket takes only the
    page's own origin (`http://` + the Host it asked) and the token.
    """

    def __init__(self, token: str, host: str, port: int) -> None:
        self.token = token
        self.loopback = is_loopback(host)
        self.port = port

    def host_allowed(self, request: Request) -> bool:
        """Whether the request names this server (always, when bound beyond loopback)."""
        if not self.loopback:
            return True
        host = _one(request, "Host")
        name, _, port = host.rpartition(":")
        if not port.isdigit() or int(port) != self.port:
            return False
        return is_loopback(name)

    def token_ok(self, path: str) -> bool:
        """Whether the request's `token` query parameter is this launch's."""
        given = parse_qs(urlsplit(path).query).get("token", [""])[-1]
        return hmac.compare_digest(given.encode(), self.token.encode())

    def origin_ok(self, request: Request) -> bool:
        """Whether the socket request comes from the page's own origin."""
        origin, host = _one(request, "Origin"), _one(request, "Host")
        return bool(origin) and bool(host) and origin == f"http://{host}"


def _one(request: Request, name: str) -> str:
    """A header given once ("" when missing or repeated: a repeated Host is refused)."""
    try:
        return request.headers.get(name, "")
    except MultipleValuesError:
        return ""
