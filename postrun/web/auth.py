"""Who may talk to the review app: Host check, one-time login tokens, session cookies, CSRF tokens.

A page that shows a person's agent history (secrets agents printed included) is closed by
default. The server's secret lives only in its memory and in a 0600 state file; ``postrun
open`` reads that file and mints a login token from it, so no request ever carries the secret.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from collections.abc import Iterable

LOGIN_TOKEN_SECONDS = 60
_CLOCK_SKEW_SECONDS = 5  # `postrun open` and the server read the same clock, but not at once


def allowed_hosts(port: int, host: str = "127.0.0.1") -> frozenset[str]:
    """The ``Host`` values a page on ``host``:``port`` may be asked for (anything else is DNS
    rebinding): the address it listens on, and the names of the usual loopback addresses."""
    bound = f"[{host}]" if ":" in host else host
    return frozenset({f"{bound}:{port}", f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"})


def _mac(secret: str, *parts: str) -> str:
    return hmac.new(secret.encode(), "|".join(parts).encode(), hashlib.sha256).hexdigest()


def _same(presented: str, expected: str) -> bool:
    """Constant-time equality of a presented token with ours. Ours are ASCII, so anything else
    is simply not ours: ``compare_digest`` raises on non-ASCII text, and a stray cookie, form
    field or link must be a 401/403, never a 500."""
    return presented.isascii() and hmac.compare_digest(presented, expected)


def login_token(secret: str, now: float, nonce: str | None = None) -> str:
    """A login token issued at ``now`` (seconds since the epoch): ``<ms>.<nonce>.<mac>``."""
    issued = str(int(now * 1000))
    nonce = nonce or secrets.token_urlsafe(16)
    return f"{issued}.{nonce}.{_mac(secret, 'login', issued, nonce)}"


def csrf_token(secret: str, session: str) -> str:
    return _mac(secret, "csrf", session)


class Gate:
    """The server's side: checks login tokens once, remembers signed-in browsers."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self._lock = threading.Lock()
        self._used: dict[str, float] = {}  # nonce -> when it stops being valid anyway
        self._sessions: set[str] = set()

    def redeem(self, token: str, now: float) -> str | None:
        """A new session for a valid, fresh, unused ``token``; None otherwise."""
        issued_text, _, rest = token.partition(".")
        nonce, _, mac = rest.partition(".")
        if not (issued_text.isdigit() and nonce and mac):
            return None
        if not _same(mac, _mac(self.secret, "login", issued_text, nonce)):
            return None
        age = now - int(issued_text) / 1000
        if not -_CLOCK_SKEW_SECONDS <= age <= LOGIN_TOKEN_SECONDS:
            return None
        with self._lock:
            self._used = {key: until for key, until in self._used.items() if until > now}
            if nonce in self._used:
                return None
            self._used[nonce] = now + LOGIN_TOKEN_SECONDS + _CLOCK_SKEW_SECONDS
            session = secrets.token_urlsafe(32)
            self._sessions.add(session)
        return session

    def signed_in(self, session: str | None) -> bool:
        if not session:
            return False
        with self._lock:
            return any(_same(session, known) for known in self._sessions)

    def csrf(self, session: str) -> str:
        return csrf_token(self.secret, session)

    def csrf_ok(self, session: str | None, token: str | None) -> bool:
        return bool(session and token) and _same(str(token), self.csrf(str(session)))


def origin_allowed(origin: str | None, hosts: Iterable[str], fetch_site: str | None = None) -> bool:
    """A POST must come from one of the app's own origins.

    Under ``Referrer-Policy: no-referrer`` browsers send a form's Origin as ``null``; then the
    browser's own ``Sec-Fetch-Site`` must say the form was on this origin.
    """
    if origin == "null":
        return fetch_site == "same-origin"
    return origin is not None and origin in {f"http://{host}" for host in hosts}
