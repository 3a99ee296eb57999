"""Memory and knowledge: an agent's memory documents, episodic summaries, the agent's own memory search, and its
knowledge graph as a picture and as tables.

Everything is the API's: ``GET /v1/agents/{id}/memory/documents``, ``…/memory/episodes``,
``…/knowledge/entities`` and ``…/knowledge/relations`` (one page each: what the key may see), and the search box
is ``GET /v1/agents/{id}/memory/search`` — the very search the agent's ``search_memory`` tool runs — in the
memory SCOPE typed next to it (a person's user ID, ``group:…``, or empty for the agent's own memory; the scopes
of the rows shown are offered).  A search the API refuses (a blank query, a scope the key may not use) shows
the API's error in place of the matches; the rest of the page is still shown.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import ApiFailure, ConsoleApi, segment
from agentfy.gateway.console.graph import graph_svg, relations_table
from agentfy.gateway.console.layout import copyable, error_box, esc, field, page, table
from agentfy.gateway.console.responses import html
from agentfy.gateway.console.screens.agents import agent_url
from agentfy.gateway.console.visit import visit

router = APIRouter()
#: Rows per list of the page (the API's page size).
PAGE_SIZE: Final = 100
#: Matches a search shows at most.
SEARCH_LIMIT: Final = 20
#: How much of a document or summary the tables show (the search shows the API's snippet).
EXCERPT_CHARS: Final = 240


def memory_url(agent_id: str) -> str:
    return agent_url(agent_id, "/memory")


def scope_label(scope: str) -> str:
    """A memory scope as the page shows it (escaped): the empty scope is the agent's own memory."""
    return '<span class="meta">agent\'s own</span>' if scope == "" else f"<code>{esc(scope)}</code>"


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return esc(flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS - 1] + "…")


def _search_form(agent_id: str, query: str, scope: str, scopes: list[str]) -> str:
    options = "".join(f'<option value="{esc(s)}"></option>' for s in scopes)
    return (f'<form method="get" action="{esc(memory_url(agent_id))}" role="search" id="search-form">'
            + field("q", "Search memory (every word must match)", value=query, kind="search", required=True)
            + field("scope", "Memory scope (a person's user ID, group:…; empty: the agent's own)", value=scope,
                    extra=' list="scopes" autocomplete="off"')
            + f'<datalist id="scopes">{options}</datalist><button type="submit" id="search">Search</button></form>')


async def _hits(api: ConsoleApi, agent_id: str, query: str, scope: str) -> str:
    try:
        found = await api.get(f"/agents/{segment(agent_id)}/memory/search", query=query, scope=scope,
                              limit=str(SEARCH_LIMIT))
    except ApiFailure as failure:
        if failure.status == 401:
            raise
        return error_box(failure.status, failure.code, failure.message, field=failure.field, value=failure.value)
    rows = ([esc(hit["kind"]), f"<code>{esc(hit['title'])}</code>", esc(" ".join(hit["snippet"].split())),
             copyable(hit["id"])] for hit in found["items"])
    return table(("Kind", "Title", "Snippet", "ID"), rows, table_id="hits",
                 empty=f"Nothing in this scope's memory matches {query!r}.")


def _document_row(document: dict[str, Any]) -> list[str]:
    return [scope_label(document["user_id"]), f"<code>{esc(document['path'])}</code>",
            _excerpt(document["content"]), esc(document["updated_at"])]


def _episode_row(summary: dict[str, Any]) -> list[str]:
    return [scope_label(summary["user_id"]), f"<code>{esc(summary['session_key'])}</code> "
            f"#{esc(summary['compaction_count'])}", _excerpt(summary["summary"]), esc(summary["created_at"]),
            esc(summary["promoted_at"] or "waiting")]


def _entity_row(entity: dict[str, Any]) -> list[str]:
    return [esc(entity["name"]), esc(entity["entity_type"]), scope_label(entity["user_id"]), copyable(entity["id"])]


def _more(found: dict[str, Any], what: str) -> str:
    """A note that a list has more than its first page (the page shows one page of each)."""
    return "" if found["next_cursor"] is None else f'<p class="meta">Only the first {PAGE_SIZE} {esc(what)} shown.</p>'


@router.get("/agents/{agent_id}/memory")
async def agent_memory(request: Request, agent_id: str, q: str | None = None, scope: str = "") -> Response:
    current = await visit(request)
    request.state.back = agent_url(agent_id)
    agent = await current.api.get(f"/agents/{segment(agent_id)}")
    base = f"/agents/{segment(agent['id'])}"
    documents = await current.api.get(f"{base}/memory/documents", limit=str(PAGE_SIZE))
    episodes = await current.api.get(f"{base}/memory/episodes", limit=str(PAGE_SIZE))
    entities = await current.api.get(f"{base}/knowledge/entities", limit=str(PAGE_SIZE))
    relations = await current.api.get(f"{base}/knowledge/relations", limit=str(PAGE_SIZE))
    scopes = sorted({row["user_id"] for row in documents["items"] + episodes["items"]})
    searched = "" if q is None else (f'<section id="results" aria-live="polite"><h3>Matches</h3>'
                                     f"{await _hits(current.api, agent['id'], q, scope)}</section>")
    graph = (graph_svg(entities["items"], relations["items"]) if entities["items"]
             else '<p class="empty" id="graph-empty">No entities yet.</p>')
    body = (f'<p><a href="{esc(agent_url(agent["id"]))}">Agent {esc(agent["agent_key"])}</a></p>'
            '<h2>Search</h2><p class="meta">The same search the agent runs with its search_memory tool: its '
            "memory documents and episodic summaries in one memory scope.</p>"
            + _search_form(agent["id"], q or "", scope, scopes) + searched
            + "<h2>Memory documents</h2>"
            + table(("Scope", "Path", "Content", "Updated"), (_document_row(d) for d in documents["items"]),
                    table_id="documents", empty="No memory documents.") + _more(documents, "documents")
            + "<h2>Episodic summaries</h2>"
            + table(("Scope", "Session", "Summary", "Created", "Promoted"),
                    (_episode_row(s) for s in episodes["items"]), table_id="episodes",
                    empty="No episodic summaries.") + _more(episodes, "summaries")
            + f'<h2>Knowledge graph</h2><figure class="graph">{graph}<figcaption>Entities round a circle, '
              "relations as arrows from source to target; the tables below say the same in text.</figcaption>"
              "</figure><h3>Entities</h3>"
            + table(("Name", "Type", "Scope", "ID"), (_entity_row(e) for e in entities["items"]),
                    table_id="entities", empty="No entities.") + _more(entities, "entities")
            + "<h3>Relations</h3>" + relations_table(entities["items"], relations["items"])
            + _more(relations, "relations"))
    return html(page(f"Memory of {agent['agent_key']}", body, viewer=current.viewer, section="agents"))
