"""The Operations screen's forms, one way: each section's handler starts with :func:`posted` and ends with
:func:`done`, so every change is CSRF-checked, a refusal of the API goes back to the screen, and success lands on
the section that changed with one of the screen's fixed sentences (``operations.DONE``)."""

from __future__ import annotations

from typing import Final

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.responses import redirect
from agentfy.gateway.console.visit import Visit, submitted

SCREEN: Final = "/console/operations"


async def posted(request: Request) -> tuple[Visit, FormData]:
    """The visit and its checked form (:func:`~agentfy.gateway.console.visit.submitted`), back to the screen."""
    return await submitted(request, SCREEN)


def done(request: Request, word: str, section: str) -> Response:
    """To the screen, saying ``word``'s sentence, at the heading ``{section}-heading``."""
    return redirect(request, f"{SCREEN}?done={word}#{section}-heading")
