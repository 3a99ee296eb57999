"""``/v1/vault``: an agent's files — upload (one file or a fail-fast batch), list, download, delete.

The upload is a multipart form whose ``agent_id`` field takes an agent ID **or** an agent_key, resolved by the
same resolver as every other entry point (a form field with its own parsing would be a way around the
resolver's tenant check).  A batch (``files`` repeated with ``paths``) is all or nothing: one bad file fails
the request with an error naming ``paths[i]`` or ``files[i]``, and nothing is written.
"""

from __future__ import annotations

import re
from typing import Annotated, Final
from urllib.parse import quote

from fastapi import APIRouter, Depends, File, Form, Path, Request, Response, UploadFile

from agentfy.errors import ApiError
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.limits import UPLOAD_FILE_MAX_BYTES, UPLOAD_FILES_MAX_BYTES
from agentfy.gateway.openapi import BODY_RULES
from agentfy.gateway.pages import Cursor, Limit, Page, paged
from agentfy.gateway.resolve import agent_in, agent_loop
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas import AGENT_REF_DESCRIPTION, AGENT_REF_MAX_LENGTH, AGENT_REF_PATTERN
from agentfy.gateway.routes.schemas_data import (
    VaultDocumentOut,
    VaultUploadOut,
    renamed,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.identity import InvalidAgentKeyError, InvalidIdError
from agentfy.ids import id_pattern
from agentfy.store.errors import InvalidInputError, StoreError
from agentfy.store.inputs import TEXT_PATTERN, text_schema
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import vault
from agentfy.store.repos._batch import PATH_MAX_LENGTH
from agentfy.store.repos.vault import VaultDocumentInfo, VaultUpload

router = APIRouter(tags=["vault"], route_class=ApiRoute)

MAX_FILE_BYTES: Final = UPLOAD_FILE_MAX_BYTES
MAX_REQUEST_BYTES: Final = UPLOAD_FILES_MAX_BYTES
MAX_FILES: Final = 100
DEFAULT_CONTENT_TYPE: Final = "application/octet-stream"
_FORM_FIELDS: Final = frozenset({"agent_id", "path", "file", "files", "paths"})
#: A file part: a multipart part with a filename (a part without one is a plain field, not a file).
_FILE_PART: Final = {"type": "string", "contentMediaType": "application/octet-stream"}
#: A repeated field in a multipart form: one part or more (an empty list is no part, so no field at all).
_SOME_PARTS: Final = {"type": "array", "minItems": 1}
#: One file or a batch, never both, and no other field (:func:`_known_form_fields`, :func:`_rows`), as the
#: form's schema states it.  That ``paths`` and ``files`` come in equal numbers no schema can say.
UPLOAD_FORM_RULES: Final = {
    "additionalProperties": False,
    "oneOf": [{"required": ["path", "file"], "properties": {"path": {"type": "string"}, "file": _FILE_PART,
                                                            "paths": False, "files": False}},
              {"required": ["paths", "files"], "properties": {"paths": _SOME_PARTS, "files": _SOME_PARTS,
                                                              "path": False, "file": False}}],
}
# type/subtype[; parameters], printable ASCII only: it is sent back as a response header.
_CONTENT_TYPE: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+/[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:\s*;[ -~]*)?")
_UPLOAD_FIELD: Final = re.compile(r"uploads\[(\d+)\]\.(\w+)")
#: What the batch's ``paths`` hold (the store's check of each, and :data:`MAX_FILES`), as the schema states it.
_BATCH_PATHS: Final = {"maxItems": MAX_FILES, "items": {"type": "string", **text_schema(PATH_MAX_LENGTH)}}

DocumentId = Annotated[str, Path(max_length=200, description="A vault document's ID.",
                                 json_schema_extra={"pattern": id_pattern("vault-document")})]


def document_out(info: VaultDocumentInfo) -> VaultDocumentOut:
    return VaultDocumentOut(id=info.id, agent_id=info.agent_id, path=info.path, content_type=info.content_type,
                            size=info.size, created_at=info.created_at)


async def _known_form_fields(request: Request) -> None:
    """Refuse unknown form fields (the forms' ``extra="forbid"``): nothing else, the tenant least of all,
    is read from the form.  And refuse a ``file``/``files`` part without a filename: the framework reads such a
    part as text, already decoded, so storing it could change its bytes (no schema can require the filename)."""
    form = await request.form()  # parsed once already for the endpoint's parameters; this is the cached copy
    unknown = sorted(set(form.keys()) - _FORM_FIELDS)
    if unknown:
        raise ApiError(422, "invalid_input", f"unknown form field {unknown[0]!r}; expected agent_id, path and file, "
                       "or agent_id, paths and files", field=unknown[0])
    for name in ("file", "files"):
        for i, part in enumerate(form.getlist(name)):
            if isinstance(part, str):
                field = name if name == "file" else f"files[{i}]"
                raise ApiError(422, "invalid_input", f"{field} must be a file part: a form-data part with a "
                               "filename (a part without one is text)", field=field, value=part)


def _rows(path: str | None, file: UploadFile | None, paths: list[str] | None,
          files: list[UploadFile] | None) -> tuple[list[str], list[UploadFile], bool]:
    """``(paths, files, batch)`` of the form: ``path`` + ``file``, or ``paths`` + ``files`` of equal length."""
    if paths or files:
        if path is not None or file is not None:
            raise InvalidInputError("send either path and file, or paths and files (a batch), not both",
                                    field="file" if file is not None else "path", value=None)
        if not files:
            raise InvalidInputError("paths without files: send one files part per paths part", field="files",
                                    value=None)
        if len(paths or ()) != len(files):
            raise InvalidInputError(f"{len(files)} files but {len(paths or ())} paths: send one paths part per "
                                    "files part, in the same order", field="paths", value=None)
        if len(files) > MAX_FILES:
            raise InvalidInputError(f"{len(files)} files; at most {MAX_FILES} per request", field="files",
                                    value=len(files))
        return list(paths or ()), list(files), True
    if file is None:
        raise InvalidInputError("a file is required: send agent_id, path and file (or paths and files)",
                                field="file", value=None)
    if path is None:
        raise InvalidInputError("a path is required for the file", field="path", value=None)
    return [path], [file], False


def _read(upload: UploadFile, field: str, budget: int) -> bytes:
    """The file's bytes, or 413 past the per-file limit or the request's remaining ``budget``."""
    content = upload.file.read(MAX_FILE_BYTES + 1)
    if len(content) > MAX_FILE_BYTES:
        raise ApiError(413, "payload_too_large", f"{field} is larger than {MAX_FILE_BYTES} bytes (10 MiB), the "
                       "limit per file", field=field)
    if len(content) > budget:
        raise ApiError(413, "payload_too_large", f"{field}: the files of one request may total at most "
                       f"{MAX_REQUEST_BYTES} bytes (50 MiB)", field=field)
    return content


def _content_type(upload: UploadFile, field: str) -> str:
    value = (upload.content_type or DEFAULT_CONTENT_TYPE).strip()
    if len(value) > vault.CONTENT_TYPE_MAX_LENGTH or not _CONTENT_TYPE.fullmatch(value):
        raise InvalidInputError(f"invalid content type of {field} {value[:100]!r}: expected type/subtype",
                                field=field, value=value[:100])
    return value


@router.post("/vault/documents", operation_id="vault.upload", status_code=201, response_model=VaultUploadOut,
             dependencies=[Depends(_known_form_fields)], openapi_extra={BODY_RULES: UPLOAD_FORM_RULES},
             responses={413: {"description": "a file is larger than 10 MiB (or the files total over 50 MiB)"}})
def upload_documents(*, call: Authenticated,
                     agent_id: Annotated[str, Form(max_length=AGENT_REF_MAX_LENGTH, description=AGENT_REF_DESCRIPTION,
                                                   json_schema_extra={"pattern": AGENT_REF_PATTERN})],
                     path: Annotated[str | None, Form(min_length=1, max_length=PATH_MAX_LENGTH,
                                                      json_schema_extra={"pattern": TEXT_PATTERN},
                                                      description="The file's path in the agent's vault.")] = None,
                     file: Annotated[UploadFile | None, File(description="The file; its part's content type "
                                                                         "is stored.",
                                                             json_schema_extra=_FILE_PART)] = None,
                     paths: Annotated[list[str] | None, Form(description="Batch: one path per files part, in "
                                                                         "order.",
                                                             json_schema_extra=_BATCH_PATHS)] = None,
                     files: Annotated[list[UploadFile] | None, File(description="Batch: the files (at most "
                                                                                "100).",
                                                                    json_schema_extra={"maxItems": MAX_FILES,
                                                                                       "items": _FILE_PART})] = None,
                     ) -> VaultUploadOut:
    """Store one file (``path`` + ``file``) or a batch (``paths`` + ``files``) for an agent named by ID or
    key in ``agent_id`` (member or higher).

    All or nothing: a bad path, a path the agent already has (409) or a repeated one, a file over 10 MiB
    (413) fails the request naming ``path``/``file`` or ``paths[i]``/``files[i]``, and nothing is written.
    """
    row_paths, uploads, batch = _rows(path, file, paths, files)

    def form_field(i: int, field: str) -> str:
        name = "path" if field == "path" else "file"
        return f"{name}s[{i}]" if batch else name

    def rename(field: str) -> str:
        match = _UPLOAD_FIELD.fullmatch(field)
        if match is None:
            return field
        return "agent_id" if match[2] == "agent_id" else form_field(int(match[1]), match[2])

    budget = MAX_REQUEST_BYTES
    files_read: list[tuple[str, str, bytes]] = []
    for i, (row_path, upload) in enumerate(zip(row_paths, uploads, strict=True)):
        content = _read(upload, form_field(i, "file"), budget)
        budget -= len(content)
        files_read.append((row_path, _content_type(upload, form_field(i, "file")), content))
    try:
        with call.gateway.db.transaction() as tx:
            resolved = agent_in(tx, call.who, agent_id, "agent_id").id
            rows = [VaultUpload(agent_id=resolved, path=row_path, content_type=content_type, content=content)
                    for row_path, content_type, content in files_read]
            ids = vault.upload_documents(tx, call.who.scope, rows)
            stored = {d.id: d for d in vault.list_vault_documents(tx, call.who.scope, resolved)}
    except (InvalidIdError, InvalidAgentKeyError, StoreError) as error:
        translated = renamed(error, rename)
        if translated is error:
            raise
        raise translated from error
    return VaultUploadOut(documents=[document_out(stored[i]) for i in ids])


@router.get("/agents/{agent}/vault", operation_id="vault.list", response_model=Page[VaultDocumentOut])
def list_documents(agent: AgentRef, call: Authenticated,
                   limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[VaultDocumentOut]:
    """The agent's vault documents by path, without their content, a page at a time."""
    agent_id = agent_loop(call.gateway, call.who, agent).agent.id
    return paged(call.gateway, call.who, "vault.list", vault.PAGES, fetch=lambda tx, **page: vault.list_vault_documents(
        tx, call.who.scope, agent_id, **page), out=document_out, limit=limit, cursor=cursor)


@router.get("/vault/documents/{document_id}", operation_id="vault.download", response_class=Response,
            responses={200: {"description": "The file's bytes, sent with the content type it was uploaded with "
                                            f"({DEFAULT_CONTENT_TYPE} when the upload named none): any media type.",
                             "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}}}})
def download_document(document_id: DocumentId, call: Authenticated) -> Response:
    """A document's bytes with its content type (as an attachment). Another organization's and a missing
    document: the same 404."""
    with call.gateway.db.transaction(write=False) as tx:
        document = vault.get_vault_document(tx, call.who.scope, document_id)
    name = document.path.rsplit("/", 1)[-1] or "document"
    return Response(document.content, headers={
        "Content-Type": document.content_type,  # as stored (media_type would append a charset to text/*)
        "Content-Disposition": f"attachment; filename*=UTF-8''{quote(name, safe='')}",
        "X-Content-Type-Options": "nosniff",
        "X-Vault-Document-Id": document.id,
    })


@router.delete("/vault/documents/{document_id}", operation_id="vault.delete", status_code=204, response_class=Response)
def delete_document(document_id: DocumentId, call: Authenticated) -> Response:
    """Delete a document (operator or higher). Another organization's and a missing document: the same 404."""
    with call.gateway.db.transaction() as tx:
        vault.delete_vault_document(tx, call.who.scope, document_id)
    return Response(status_code=204)
