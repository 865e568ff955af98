"""The ASGI layer in front of every route: Host check, sign-in, security headers.

Written as plain ASGI (not a BaseHTTPMiddleware) so Server-Sent Events stream through it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import cookie_parser
from starlette.responses import PlainTextResponse

from postrun.web.auth import Gate

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# No inline script or style, nothing from another origin, never framed.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}
SIGN_IN_HINT = "not signed in: run `postrun open` (or `postrun open --print`) for a login link\n"
OPEN_PATHS = frozenset({"/login"})


class Guard:
    def __init__(self, app: ASGIApp, gate: Gate, hosts: frozenset[str], cookie: str) -> None:
        self.app = app
        self.gate = gate
        self.hosts = hosts
        self.cookie = cookie

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        headers = Headers(scope=scope)
        if headers.get("host") not in self.hosts:
            # Another Host is a page on another name pointing here (DNS rebinding).
            await PlainTextResponse("forbidden: unknown Host\n", 403)(scope, receive, send_secured)
            return
        session = cookie_parser(headers.get("cookie", "")).get(self.cookie)
        if scope["path"] not in OPEN_PATHS and not self.gate.signed_in(session):
            await PlainTextResponse(SIGN_IN_HINT, 401)(scope, receive, send_secured)
            return
        scope.setdefault("state", {})["session"] = session
        await self.app(scope, receive, send_secured)
