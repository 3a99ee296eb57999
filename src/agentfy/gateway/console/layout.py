"""The console's HTML: escaping, the page frame, and the small pieces every screen uses.

Pages are plain strings built here and in the screens; every value that comes from data or a request goes
through :func:`esc` (text and attribute values alike: quotes are escaped too), and nothing else is interpolated
but other pieces built the same way.  No template engine: the gateway does not depend on one.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

STATIC: Final = "/console/static"
#: htmx swaps every answer, errors included (its default drops 4xx/5xx bodies): an error is shown, never blank.
_HTMX_CONFIG: Final = json.dumps({"responseHandling": [{"code": "204", "swap": False},
                                                      {"code": ".*", "swap": True}]})


def esc(value: object) -> str:
    """``value`` as HTML text or a quoted attribute value."""
    return html.escape("" if value is None else str(value), quote=True)


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is signed in, for the frame: the organization's slug, the key's role, and whether the admin
    screens (and the usage screen) are shown."""

    tenant_slug: str
    role: str
    csrf: str
    admin: bool
    usage: bool = False


def csrf_field(csrf: str) -> str:
    return f'<input type="hidden" name="csrf" value="{esc(csrf)}">'


def post_form(action: str, csrf: str, body: str, *, label: str, extra: str = "") -> str:
    """A form that POSTs to ``action`` with the session's token; ``body`` is its fields, ``label`` its button."""
    return (f'<form method="post" action="{esc(action)}"{extra}>{csrf_field(csrf)}{body}'
            f'<button type="submit">{esc(label)}</button></form>')


def field(name: str, label: str, *, value: str = "", kind: str = "text", required: bool = False,
          extra: str = "") -> str:
    """A labelled input whose ``id`` is ``name`` (a page has one form of each field name)."""
    needed = " required" if required else ""
    return (f'<label for="{esc(name)}">{esc(label)}</label>'
            f'<input id="{esc(name)}" name="{esc(name)}" type="{esc(kind)}" value="{esc(value)}"{needed}{extra}>')


def copyable(value: str) -> str:
    """An ID shown as code with a button that copies it (``console.js``)."""
    return (f'<code class="id">{esc(value)}</code> <button type="button" class="copy" data-copy="{esc(value)}" '
            f'aria-label="Copy {esc(value)}">Copy</button>')


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], *, table_id: str, empty: str) -> str:
    """A table of already-escaped cells, or the ``empty`` sentence when there are no rows."""
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    if not body:
        return f'<p class="empty" id="{esc(table_id)}">{esc(empty)}</p>'
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in headers)
    return (f'<div class="scroll"><table id="{esc(table_id)}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def error_box(status: int, code: str, message: str, *, field: str | None = None, value: object = None) -> str:
    """An error as the API gave it: its message, with its code and status, and the field and value it names."""
    where = "" if field is None else (f'<br><span class="code">field <code>{esc(field)}</code>'
                                      + ("" if value is None else f", value <code>{esc(value)}</code>") + "</span>")
    return (f'<div class="error" role="alert" id="error"><strong>{esc(message)}</strong> '
            f'<span class="code">({esc(code)}, HTTP {esc(status)})</span>{where}</div>')


def notice(text: str) -> str:
    return f'<p class="notice" role="status" id="notice">{esc(text)}</p>'


def json_block(value: Any) -> str:
    return f"<pre>{esc(json.dumps(value, indent=2, ensure_ascii=False))}</pre>"


def _nav(viewer: Viewer, section: str) -> str:
    links = [("agents", "/console/agents", "Agents"), ("events", "/console/events", "Live events")]
    links += [("tasks", "/console/teams", "Team tasks"), ("skills", "/console/skills", "Skills")]
    if viewer.usage:
        links.append(("usage", "/console/usage", "Usage"))
    if viewer.admin:
        links.append(("operations", "/console/operations", "Operations"))
    current = ' aria-current="page"'
    items = "".join(f'<li><a href="{href}"{current if name == section else ""}>{esc(text)}</a></li>'
                    for name, href, text in links)
    sign_out = post_form("/console/sign-out", viewer.csrf, "", label="Sign out", extra=' class="inline"')
    return (f'<nav aria-label="Console"><ul>{items}</ul><p class="who">'
            f'<span id="tenant-slug">{esc(viewer.tenant_slug)}</span> · <span id="role">{esc(viewer.role)}</span>'
            f"</p>{sign_out}</nav>")


def page(title: str, body: str, *, viewer: Viewer | None, section: str = "") -> str:
    """The whole document: head (vendored CSS and scripts only), the navigation when signed in, ``body``."""
    nav = _nav(viewer, section) if viewer is not None else ""
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content="{esc(_HTMX_CONFIG)}">
<title>{esc(title)} · agentfy console</title>
<link rel="stylesheet" href="{STATIC}/console.css">
<script src="{STATIC}/htmx.min.js" defer></script>
<script src="{STATIC}/console.js" defer></script>
</head>
<body>
<header><p class="brand">agentfy console</p>{nav}</header>
<main id="main">
<h1>{esc(title)}</h1>
{body}
</main>
</body>
</html>
"""
