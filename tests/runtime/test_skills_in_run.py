"""The organization's skills reach the run: listed by name and description in the cached prefix (in name
order, byte-identical from turn to turn), their bodies loaded by ``read_skill`` on request — and another
organization's skills never — on both engines."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from agentfy.agents.prompt import CACHE_BOUNDARY_MARKER, split_system_prompt
from agentfy.agents.router import Router
from agentfy.permissions.channels import http_context
from agentfy.runtime.offline import OfflineProvider
from agentfy.runtime.prompting import SKILL_DESCRIPTION_MAX_LENGTH, skill_description
from agentfy.runtime.providers import Providers
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.repos import skills
from tests.helpers.tenants import Tenant
from tests.runtime.helpers import inbound, run

DEPLOY = "---\nname: deploy\ndescription: Ship a release to production safely\n---\n# Deploy\n1. tag\n2. push\n"
TRIAGE = "# Triage incoming bugs\nRead the report, then label it."


def _publish(db: Database, tenant: Tenant, name: str, content: str) -> None:
    with db.transaction() as tx:
        skills.create_skill(tx, tenant.scope, owner_id="user-1", name=name, content=content)


def _runtime(db: Database, tmp_path: Path) -> tuple[Runtime, OfflineProvider]:
    model = OfflineProvider()
    model.keep_requests = True
    return Runtime(db, Router(db), workspace_root=tmp_path, providers=Providers(offline=model)), model


def _say(runtime: Runtime, tenant: Tenant, text: str) -> str | None:
    context = http_context("user-1", tenant_id=tenant.scope.tenant_id, role="owner")
    return run(runtime(inbound(tenant, context, text))).text


def test_skills_are_listed_in_the_prefix_in_name_order_and_the_prefix_holds_across_turns(
        db: Database, tmp_path: Path, acme: Tenant, globex: Tenant) -> None:
    _publish(db, acme, "triage", TRIAGE)
    _publish(db, acme, "deploy", DEPLOY)
    _publish(db, globex, "payroll", "# Their payroll secrets")
    runtime, model = _runtime(db, tmp_path)
    _say(runtime, acme, "hello")
    _say(runtime, acme, "again")
    prefixes = [split_system_prompt(request.system_prompt)[0] for request in model.requests]
    assert len(set(prefixes)) == 1  # byte-identical: the provider's prompt cache holds
    assert ("## Skills\n" in prefixes[0] and "- deploy: Ship a release to production safely\n"
            "- triage: Triage incoming bugs" in prefixes[0])
    assert "payroll" not in model.requests[0].system_prompt
    runtime_section = split_system_prompt(model.requests[0].system_prompt)[1]
    assert "deploy" not in runtime_section
    assert "read_skill" in [spec.name for spec in model.requests[0].tools]


def test_without_skills_the_prompt_has_no_skills_section(db: Database, tmp_path: Path, acme: Tenant) -> None:
    runtime, model = _runtime(db, tmp_path)
    _say(runtime, acme, "hello")
    assert "## Skills" not in model.requests[0].system_prompt


def test_read_skill_loads_the_body_of_the_organization_s_skill_only(
        db: Database, tmp_path: Path, acme: Tenant, globex: Tenant) -> None:
    _publish(db, acme, "deploy", DEPLOY)
    _publish(db, globex, "payroll", "# Their payroll secrets")
    runtime, _ = _runtime(db, tmp_path)
    assert "1. tag\n2. push" in (_say(runtime, acme, "/tool read_skill name=deploy") or "")
    refused = _say(runtime, acme, "/tool read_skill name=payroll") or ""
    assert "there is no skill 'payroll'; the skills are deploy" in refused
    assert "secrets" not in refused
    assert "no skill 'deploy'; the skills are payroll" in (_say(runtime, globex, "/tool read_skill name=deploy") or "")


def test_read_skill_in_an_organization_without_skills_says_so(db: Database, tmp_path: Path, acme: Tenant) -> None:
    runtime, _ = _runtime(db, tmp_path)
    assert "published no skill" in (_say(runtime, acme, "/tool read_skill name=deploy") or "")


def test_a_description_comes_from_front_matter_else_the_first_line() -> None:
    assert skill_description(DEPLOY) == "Ship a release to production safely"
    assert skill_description(TRIAGE) == "Triage incoming bugs"
    assert skill_description("\n\n   \n## \nplain words here") == "plain words here"
    assert skill_description("") == ""
    long = skill_description("word " * 100)
    assert long.endswith("…") and len(long) <= SKILL_DESCRIPTION_MAX_LENGTH


@given(st.text(max_size=2_000))
def test_a_description_is_always_one_short_line_without_the_cache_marker(content: str) -> None:
    shown = skill_description(content)
    assert "\n" not in shown and "\r" not in shown
    assert len(shown) <= SKILL_DESCRIPTION_MAX_LENGTH
    assert CACHE_BOUNDARY_MARKER not in shown
