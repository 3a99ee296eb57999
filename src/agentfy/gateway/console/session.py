"""The console's session: the signed-in API key and the session's CSRF token, sealed into one cookie.

The cookie is encrypted and authenticated (AES-GCM) with a key derived from the gateway's signing secret, so
the browser holds the API key without being able to read or change it, and a cookie made for another gateway
(another secret) or edited by one bit opens as no session at all.  The cookie is ``HttpOnly`` (no script reads
it), ``SameSite=Strict`` (no other site's page sends it), limited to ``/console``, ``Secure`` when the console is
served over HTTPS, and expires after :data:`SESSION_MAX_AGE_SECONDS`.  The key is never put in a URL.

Every form carries the session's CSRF token (:attr:`ConsoleSession.csrf`), checked on every POST
(:func:`csrf_matches`): SameSite=Strict already keeps other sites' forms out, the token keeps out anything
that gets past it (an old browser, a same-site page).  Signing in makes a new session, token included.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

COOKIE_NAME: Final = "agentfy_console"
COOKIE_PATH: Final = "/console"
#: How long a sign-in lasts (the cookie's Max-Age, and checked inside the sealed value too).
SESSION_MAX_AGE_SECONDS: Final = 12 * 3600
_KEY_LABEL: Final = b"agentfy console session cookie v1"
_NONCE_BYTES: Final = 12
#: Bounds what is decoded: a real cookie is a few hundred characters.
_COOKIE_MAX_CHARS: Final = 4096


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    """One browser's session: the API key it signed in with (``None`` before sign-in) and its CSRF token."""

    api_key: str | None
    csrf: str
    issued_at: float

    @property
    def signed_in(self) -> bool:
        return self.api_key is not None


def new_session(api_key: str | None, *, clock: Callable[[], float] = time.time) -> ConsoleSession:
    """A fresh session with a new CSRF token from the OS CSPRNG."""
    return ConsoleSession(api_key, secrets.token_urlsafe(32), clock())


class SessionSeal:
    """Seals sessions into cookie values and opens them, with a key derived from the gateway's secret."""

    def __init__(self, signing_secret: bytes, *, clock: Callable[[], float] = time.time) -> None:
        self._aead = AESGCM(hmac.new(signing_secret, _KEY_LABEL, hashlib.sha256).digest())
        self._clock = clock

    def seal(self, session: ConsoleSession) -> str:
        plain = json.dumps({"k": session.api_key, "c": session.csrf, "t": session.issued_at},
                           separators=(",", ":")).encode()
        nonce = secrets.token_bytes(_NONCE_BYTES)
        sealed = nonce + self._aead.encrypt(nonce, plain, _KEY_LABEL)
        return base64.urlsafe_b64encode(sealed).rstrip(b"=").decode("ascii")

    def open(self, value: str | None) -> ConsoleSession | None:
        """The session in a cookie value, or ``None``: absent, forged, edited, another gateway's, or expired."""
        if not value or len(value) > _COOKIE_MAX_CHARS:
            return None
        try:
            sealed = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
            plain = self._aead.decrypt(sealed[:_NONCE_BYTES], sealed[_NONCE_BYTES:], _KEY_LABEL)
            fields = json.loads(plain)
            session = ConsoleSession(fields["k"], fields["c"], float(fields["t"]))
        except (ValueError, InvalidTag, KeyError, TypeError):
            return None
        if not 0 <= self._clock() - session.issued_at < SESSION_MAX_AGE_SECONDS:
            return None
        return session

    def read(self, request: HTTPConnection) -> ConsoleSession | None:
        return self.open(request.cookies.get(COOKIE_NAME))

    def write(self, response: Response, request: Request, session: ConsoleSession) -> None:
        """Set the cookie on ``response`` (``Secure`` when the request came over HTTPS)."""
        response.set_cookie(COOKIE_NAME, self.seal(session), max_age=SESSION_MAX_AGE_SECONDS, path=COOKIE_PATH,
                            httponly=True, samesite="strict", secure=request.url.scheme == "https")

    @staticmethod
    def clear(response: Response, request: Request) -> None:
        response.delete_cookie(COOKIE_NAME, path=COOKIE_PATH, httponly=True, samesite="strict",
                               secure=request.url.scheme == "https")


def csrf_matches(session: ConsoleSession | None, sent: object) -> bool:
    """Whether a form's token is this session's (compared in constant time)."""
    if session is None or not isinstance(sent, str) or not sent:
        return False
    return hmac.compare_digest(sent.encode("utf-8", "surrogatepass"), session.csrf.encode("ascii"))
