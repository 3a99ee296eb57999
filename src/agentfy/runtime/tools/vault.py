"""``search_vault`` and ``read_vault``: the agent's vault (files uploaded for it), by its text.

* ``search_vault`` — the full-text index of the agent's text documents
  (:func:`agentfy.store.repos.search.search`, kind ``vault``); each match is its path and a snippet.
* ``read_vault`` — one text document by path or document ID, at most :data:`READ_MAX_CHARS` characters (a
  longer one says how much was shown).  A document that is not text (a PDF, an image, content that is not
  UTF-8) is refused with its media type.

The vault belongs to the agent, not to a chat SCOPE, and only its own is read: another agent's or another
organization's document is "not found", like one that does not exist.  Reading needs no grant, as reading a
skill needs none: the vault is what the organization uploaded for the agent to use; uploading is the API's job.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from agentfy.identity import Scope, parse_id_or_none
from agentfy.runtime.model import ToolSpec
from agentfy.runtime.tools import Tool, ToolEnv, ToolError, integer, parameters, string, text, whole
from agentfy.runtime.tools.records import SEARCH_RESULTS, SEARCH_RESULTS_MAX, search_answer
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.repos import search, vault
from agentfy.store.repos._batch import PATH_MAX_LENGTH

#: How much of a document one read returns (a model's context is the limit, not the document).
READ_MAX_CHARS: Final = 20_000


async def search_vault(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    query, limit = text(arguments, "query"), whole(arguments, "limit", SEARCH_RESULTS)
    return await asyncio.to_thread(search_answer, env, "search_vault", query, limit, kinds=("vault",),
                                   what="vault document")


def _lookup(env: ToolEnv, document: str) -> vault.VaultText:
    """The agent's document by ID (when ``document`` is one) or else by path; :class:`ToolError` if neither."""
    scope = Scope(env.agent.tenant_id)
    with env.db.transaction(write=False) as tx:
        if parse_id_or_none(document, "vault-document") is not None:
            try:
                return vault.get_vault_text(tx, scope, env.agent.id, document_id=document)
            except NotFoundError:
                pass  # a path may look like an ID
        try:
            return vault.get_vault_text(tx, scope, env.agent.id, path=document)
        except (NotFoundError, InvalidInputError):
            raise ToolError(f"read_vault: there is no vault document {document!r} (a path or document ID of "
                            "this agent's vault; search_vault finds them)") from None


def _read_vault(env: ToolEnv, document: str) -> str:
    found = _lookup(env, document)
    info = found.info
    if found.text is None:
        raise ToolError(f"read_vault: {info.path} is {info.content_type} ({info.size} bytes), not text; only "
                        "text documents can be read")
    shown = found.text[:READ_MAX_CHARS]
    header = f"{info.path} ({info.content_type}, {info.size} bytes)"
    if len(shown.encode()) < info.size:
        header += f", the first {len(shown)} characters"
    return f"{header}:\n{shown}"


async def read_vault(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    return await asyncio.to_thread(_read_vault, env, text(arguments, "document"))


SEARCH_VAULT: Final = Tool(ToolSpec("search_vault", "Search the text documents of this agent's vault (files "
                                    "uploaded for it); a match contains every word.",
                                    parameters({"query": string("words to look for",
                                                                max_length=search.QUERY_MAX_LENGTH),
                                                "limit": integer(f"how many matches at most (default "
                                                                 f"{SEARCH_RESULTS})", minimum=1,
                                                                 maximum=SEARCH_RESULTS_MAX)},
                                               ("query",))), search_vault)
READ_VAULT: Final = Tool(ToolSpec("read_vault", f"Read a text document of this agent's vault (at most "
                                  f"{READ_MAX_CHARS} characters).",
                                  parameters({"document": string("its path or document ID",
                                                                 max_length=PATH_MAX_LENGTH)},
                                             ("document",))), read_vault)
