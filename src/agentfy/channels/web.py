"""The web chat page at ``/chat/``: static files shipped in this package (HTML, vanilla JavaScript, CSS; no
build step).  The page holds nothing secret and reads nothing on the server: it signs in with an API key the
user types, and from then on calls the public HTTP and WebSocket APIs like any client, under their
authentication and access policy."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

WEB_DIR: Final = Path(__file__).with_name("web")
CHAT_PATH: Final = "/chat"


def mount_chat_page(app: FastAPI) -> None:
    app.mount(CHAT_PATH, StaticFiles(directory=WEB_DIR, html=True), name="chat")
