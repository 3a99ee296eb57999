"""The vault: files an agent keeps (uploads, attachments), one per (agent, path).

Bulk upload is all or nothing: every row is validated — the agent ID, the
path, the content type, the content, each agent living in the scope's tenant (one query for the batch's
distinct agents), no (agent, path) already taken or repeated in the batch (one query) — before the first
write.  One bad row fails the whole batch with an error naming ``uploads[i].<field>`` and the value, and
nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import AgentId, OrgId, Scope, VaultDocumentId, parse_id
from agentfy.store.db import Sql, Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, UniqueViolation
from agentfy.store.inputs import check_text
from agentfy.store.paging import Keyset
from agentfy.store.repos._batch import (
    PATH_MAX_LENGTH,
    json_list,
    json_values,
    require_agent,
    require_agents,
    row_field,
)
from agentfy.store.schema import vault_documents
from agentfy.store.search_index import vault_text
from agentfy.store.sql import insert

CONTENT_TYPE_MAX_LENGTH: Final = 255
#: Per document; larger files belong in object storage, not in a database row.
MAX_DOCUMENT_BYTES: Final = 50 * 1024 * 1024

_INFO_COLUMNS: Final = (vault_documents.c.id, vault_documents.c.tenant_id, vault_documents.c.agent_id,
                        vault_documents.c.path, vault_documents.c.content_type, vault_documents.c.size,
                        vault_documents.c.created_at)
_IN_TENANT: Final = vault_documents.c.tenant_id == sa.bindparam("tenant_id")
_INSERT: Final = insert(vault_documents, ["id", "tenant_id", "agent_id", "path", "content_type", "size", "content",
                                          "text_content", "created_at"])
# Candidates for a path conflict: the batch's agents x the batch's paths, filtered exactly in Python.
_TAKEN: Final = Sql(lambda d: sa.select(vault_documents.c.agent_id, vault_documents.c.path).where(
    _IN_TENANT, vault_documents.c.agent_id.in_(json_values("agents", d)),
    vault_documents.c.path.in_(json_values("paths", d))))
_BY_ID: Final = sa.select(*_INFO_COLUMNS, vault_documents.c.content).where(
    _IN_TENANT, vault_documents.c.id == sa.bindparam("id"))
PAGES: Final[Keyset[VaultDocumentInfo]] = Keyset(
    sa.select(*_INFO_COLUMNS).where(_IN_TENANT, vault_documents.c.agent_id == sa.bindparam("agent_id")),
    (vault_documents.c.path, vault_documents.c.id), lambda d: (d.path, d.id))
_TEXT: Final = sa.select(*_INFO_COLUMNS, vault_documents.c.text_content).where(
    _IN_TENANT, vault_documents.c.agent_id == sa.bindparam("agent_id"))
_TEXT_BY_ID: Final = _TEXT.where(vault_documents.c.id == sa.bindparam("id"))
_TEXT_BY_PATH: Final = _TEXT.where(vault_documents.c.path == sa.bindparam("path"))
_DELETE: Final = sa.delete(vault_documents).where(_IN_TENANT, vault_documents.c.id == sa.bindparam("id"))


@dataclass(frozen=True, slots=True, kw_only=True)
class VaultUpload:
    """One file to store for ``agent_id`` at ``path`` (keyword-only: three adjacent strings)."""

    agent_id: str
    path: str
    content_type: str
    content: bytes


@dataclass(frozen=True, slots=True)
class VaultDocumentInfo:
    """A vault document without its content (listings)."""

    id: VaultDocumentId
    tenant_id: OrgId
    agent_id: AgentId
    path: str
    content_type: str
    size: int
    created_at: str


@dataclass(frozen=True, slots=True)
class VaultText:
    """A vault document as text: its listing and its first ``INDEXED_CHARS`` characters (``None``: not text)."""

    info: VaultDocumentInfo
    text: str | None


@dataclass(frozen=True, slots=True)
class VaultDocument(VaultDocumentInfo):
    """A vault document with its content: its listing plus the bytes."""

    content: bytes


def _info(row: tuple[Any, ...]) -> VaultDocumentInfo:
    return VaultDocumentInfo(VaultDocumentId(row[0]), OrgId(row[1]), AgentId(row[2]), row[3], row[4], int(row[5]),
                             row[6])


def _taken(agent: str, path: str, field: str) -> ConflictError:
    return ConflictError(f"{field}: agent {agent} already has a vault document at path {path!r}",
                         field=field, value=path)


def _check_content(value: object, field: str) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise InvalidInputError(f"invalid {field}: expected bytes, got {type(value).__name__}", field=field,
                                value=type(value).__name__)
    content = bytes(value)
    if len(content) > MAX_DOCUMENT_BYTES:
        raise InvalidInputError(f"invalid {field}: {len(content)} bytes; at most {MAX_DOCUMENT_BYTES} are allowed",
                                field=field, value=len(content))
    return content


def upload_documents(tx: Tx, scope: Scope, uploads: Sequence[VaultUpload]) -> list[VaultDocumentId]:
    """Store a batch of files, all or nothing; returns their minted IDs in input order.

    Errors (each naming ``uploads[i].<field>`` and the value, raised before anything is written):
    :class:`~agentfy.identity.InvalidIdError` for a malformed agent ID, :class:`InvalidInputError` for a
    bad path, content type or content, :class:`NotFoundError` for an agent that is not the tenant's, and
    :class:`ConflictError` naming the agent and the path when the agent already has a document there or
    the batch names the same (agent, path) twice.
    """
    first_agent_field: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], int] = {}
    stamp = now()
    for i, upload in enumerate(uploads):
        agent_field = row_field("uploads", i, "agent_id")
        agent = parse_id(upload.agent_id, "agent", field=agent_field)
        first_agent_field.setdefault(agent, agent_field)
        path_field = row_field("uploads", i, "path")
        path = check_text(upload.path, path_field, max_length=PATH_MAX_LENGTH)
        content_type = check_text(upload.content_type, row_field("uploads", i, "content_type"),
                                  max_length=CONTENT_TYPE_MAX_LENGTH)
        content = _check_content(upload.content, row_field("uploads", i, "content"))
        first = seen.setdefault((agent, path), i)
        if first != i:
            raise ConflictError(f"{path_field}: agent {agent} and path {path!r} are already uploads[{first}] of "
                                "this batch", field=path_field, value=path)
        rows.append({"tenant_id": scope.tenant_id, "agent_id": agent, "path": path, "content_type": content_type,
                     "size": len(content), "content": content,
                     "text_content": vault_text(content_type, content), "created_at": stamp})
    if not rows:
        return []
    require_agents(tx, scope, first_agent_field)
    _refuse_taken_paths(tx, scope, rows)
    try:
        ids = tx.insert_minted_batch("vault-document", _INSERT, rows)
    except UniqueViolation as error:
        if error.is_primary_key:
            raise
        _refuse_taken_paths(tx, scope, rows)  # a concurrent upload took a path: name it
        raise ConflictError("another upload took one of these paths at the same time; retry the batch",
                            field="path", value=None) from None
    return [VaultDocumentId(i) for i in ids]


def _refuse_taken_paths(tx: Tx, scope: Scope, rows: list[dict[str, Any]]) -> None:
    """:class:`ConflictError` for the first row whose (agent, path) already exists (one query)."""
    taken = set(tx.all(_TAKEN, {"tenant_id": scope.tenant_id,
                                "agents": json_list({row["agent_id"] for row in rows}),
                                "paths": json_list({row["path"] for row in rows})}))
    if taken:
        for i, row in enumerate(rows):
            if (row["agent_id"], row["path"]) in taken:
                raise _taken(row["agent_id"], row["path"], row_field("uploads", i, "path"))


def get_vault_document(tx: Tx, scope: Scope, document_id: str) -> VaultDocument:
    """The document (with its content) in the scope's tenant, or :class:`NotFoundError`."""
    document_id = parse_id(document_id, "vault-document", field="document_id")
    row = tx.one(_BY_ID, {"tenant_id": scope.tenant_id, "id": document_id})
    if row is None:
        raise NotFoundError("vault document", document_id)
    info = _info(row)
    return VaultDocument(info.id, info.tenant_id, info.agent_id, info.path, info.content_type, info.size,
                         info.created_at, bytes(row[7]))


def get_vault_text(tx: Tx, scope: Scope, agent_id: str, *, document_id: str | None = None,
                   path: str | None = None) -> VaultText:
    """One of the agent's documents as text, by ID or by path (exactly one of them), without loading its bytes.

    A document of another agent or tenant is :class:`NotFoundError`, exactly like one that does not exist.
    """
    agent = parse_id(agent_id, AgentId, field="agent_id")
    if (document_id is None) == (path is None):
        raise InvalidInputError("expected exactly one of document_id and path", field="document_id",
                                value=document_id)
    params: dict[str, Any] = {"tenant_id": scope.tenant_id, "agent_id": agent}
    if document_id is not None:
        params["id"] = parse_id(document_id, "vault-document", field="document_id")
        row = tx.one(_TEXT_BY_ID, params)
    else:
        params["path"] = check_text(path, "path", max_length=PATH_MAX_LENGTH)
        row = tx.one(_TEXT_BY_PATH, params)
    if row is None:
        raise NotFoundError("vault document", document_id if path is None else path)
    return VaultText(_info(row), row[7])


def list_vault_documents(tx: Tx, scope: Scope, agent_id: str,
                         *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[VaultDocumentInfo]:
    """The agent's documents by path, without content (all, or a page); an agent that is not the tenant's is
    :class:`NotFoundError`."""
    agent = require_agent(tx, scope, agent_id)
    return PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "agent_id": agent}, _info, after=after, limit=limit)


def delete_vault_document(tx: Tx, scope: Scope, document_id: str) -> None:
    """Delete a document; task attachments that referenced it keep their row with the reference cleared."""
    document_id = parse_id(document_id, "vault-document", field="document_id")
    if tx.execute(_DELETE, {"tenant_id": scope.tenant_id, "id": document_id}).rowcount == 0:
        raise NotFoundError("vault document", document_id)
