"""Request and response models of the team task routes (``/v1/teams/{team_id}/tasks``, ``/v1/tasks/…``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from agentfy.gateway.routes.schemas import Strict, agent_ref_field, id_field, id_path, optional_id_field, text_field
from agentfy.store.repos.tasks import DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS, TITLE_MAX_LENGTH
from agentfy.store.schema import TASK_TEXT_MAX_LENGTH

TaskIdPath = Annotated[str, id_path("team-task", "team task")]
AttachmentIdPath = Annotated[str, id_path("team-task-attachment", "task attachment")]
#: One of the lifecycle's statuses (``agentfy.store.schema.TASK_STATUSES``).
TaskStatus = Literal["open", "claimed", "in_progress", "done", "failed", "cancelled", "timed_out"]


class TaskIn(Strict):
    title: str = text_field(TITLE_MAX_LENGTH, description="What is to be done, in a line.")
    description: str = text_field(TASK_TEXT_MAX_LENGTH, allow_empty=True, default="",
                                  description="The details the agent doing it is told after the title.")
    assignee: str | None = agent_ref_field("The agent it is for, by ID or agent_key; it must be on the team.",
                                           default=None)
    timeout_seconds: int = Field(default=DEFAULT_TIMEOUT_SECONDS, ge=1, le=MAX_TIMEOUT_SECONDS, description=(
        "How long it may stay claimed or in progress before it times out."))


class TaskOut(BaseModel):
    id: str = id_field("team-task")
    tenant_id: str = id_field("org")
    team_id: str = id_field("team")
    title: str
    description: str
    status: TaskStatus
    created_by_agent_id: str | None = optional_id_field("agent")
    assignee_agent_id: str | None = optional_id_field("agent")
    claimed_by_agent_id: str | None = optional_id_field("agent")
    claimed_at: str | None
    timeout_seconds: int
    deadline_at: str | None = Field(description="When it times out if nobody finishes it (claimed or in progress).")
    result: str | None
    error: str | None = Field(description="Why it failed, timed out or was cancelled.")
    session_key: str | None = Field(description="The session of its last dispatched run.")
    created_at: str
    updated_at: str


class TaskAssignIn(Strict):
    agent: str | None = agent_ref_field("The agent by ID or agent_key, on the task's team; null unassigns.")


class TaskClaimIn(Strict):
    agent: str = agent_ref_field("The agent that takes the task, by ID or agent_key, on the task's team.")


class TaskCompleteIn(Strict):
    result: str = text_field(TASK_TEXT_MAX_LENGTH, allow_empty=True)


class TaskFailIn(Strict):
    error: str = text_field(TASK_TEXT_MAX_LENGTH, description="Why it failed.")


class TaskDispatchIn(Strict):
    agent: str | None = agent_ref_field("The teammate that runs it, by ID or agent_key, on the task's team "
                                        "(default: the task's assignee).", default=None)


class AttachmentIn(Strict):
    name: str = text_field(TITLE_MAX_LENGTH)
    vault_document_id: str | None = optional_id_field("vault-document", "A vault document of the organization.")


class AttachmentOut(BaseModel):
    id: str = id_field("team-task-attachment")
    task_id: str = id_field("team-task")
    name: str
    vault_document_id: str | None = optional_id_field("vault-document")
    created_by_agent_id: str | None = optional_id_field("agent")
    created_at: str
