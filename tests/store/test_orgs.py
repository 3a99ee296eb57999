"""Organizations, the platform organization, users and memberships (both engines)."""

from __future__ import annotations

import pytest

from agentfy.identity import InvalidIdError, Scope
from agentfy.ids import is_canonical_id
from agentfy.store.db import Database
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, TransactionFailedError
from agentfy.store.repos import orgs
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count, new_agent


def test_create_mints_an_org_id_and_slugs_are_unique(db: Database) -> None:
    with db.transaction() as tx:
        org = orgs.create_organization(tx, slug="acme", name="Acme", settings={"plan": "pro"})
    assert is_canonical_id(org.id, "org") and org.settings == {"plan": "pro"}
    with pytest.raises(ConflictError, match="slug 'acme' is already used"), db.transaction() as tx:
        orgs.create_organization(tx, slug="acme", name="Other")
    assert count(db, "organizations") == 1


@pytest.mark.parametrize("bad", ["", "Acme", "acme corp", "a" * 64, "-acme", "org-calm-rivers-k8m4p2d7n9x3",
                                 "0193a5b0-7000-7000-8000-000000000001"])
def test_bad_slugs_are_refused_and_nothing_is_written(db: Database, bad: str) -> None:
    with pytest.raises(InvalidInputError) as caught, db.transaction() as tx:
        orgs.create_organization(tx, slug=bad, name="X")
    assert caught.value.field == "slug"
    assert count(db, "organizations") == 0


def test_the_platform_organization_is_created_once_with_the_seeds_id(db: Database) -> None:
    with db.transaction() as tx:
        first, created = orgs.ensure_platform_organization(tx)
    with db.transaction() as tx:
        again, created_again = orgs.ensure_platform_organization(tx)
    assert first.id == again.id == "org-silver-days-zxy8s9bpp6hp"
    assert (created, created_again) == (True, False) and count(db, "organizations") == 1


def test_default_agent_must_be_an_agent_of_the_tenant(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    mine, theirs = new_agent(db, acme, "bot"), new_agent(db, globex, "bot")
    with db.transaction() as tx:
        orgs.set_default_agent(tx, acme, mine.id)
        assert orgs.get_organization(tx, acme).default_agent_id == mine.id
        with pytest.raises(NotFoundError):
            orgs.set_default_agent(tx, acme, theirs.id)
        with pytest.raises(InvalidIdError):
            orgs.set_default_agent(tx, acme, "bot")


def test_members_and_roles(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        user = orgs.create_user(tx, display_name="Ana", email="ana@example.com")
        orgs.add_member(tx, acme, user.id, "admin")
        assert orgs.member_role(tx, acme, user.id) == "admin"
    with pytest.raises(ConflictError), db.transaction() as tx:
        orgs.add_member(tx, acme, user.id, "member")
    with pytest.raises(InvalidInputError, match="role 'root' is unknown"), db.transaction() as tx:
        orgs.add_member(tx, acme, user.id, "root")
    other = make_tenant(db, "other").scope
    with db.transaction() as tx:
        assert orgs.member_role(tx, other, user.id) is None
        orgs.remove_member(tx, acme, user.id)
        assert orgs.list_members(tx, acme) == []


def test_deleting_an_unknown_organization_is_not_found(db: Database) -> None:
    with pytest.raises(NotFoundError), db.transaction() as tx:
        orgs.delete_organization(tx, "org-calm-rivers-k8m4p2d7n9x3")
    assert Scope.of("org-calm-rivers-k8m4p2d7n9x3")  # a well-formed ID is a valid scope even if unknown


def test_a_transaction_with_a_failed_statement_never_commits_on_either_engine(db: Database) -> None:
    with pytest.raises(TransactionFailedError, match="nothing was written"), db.transaction() as tx:
        orgs.create_organization(tx, slug="first", name="First")
        with pytest.raises(ConflictError):
            orgs.create_organization(tx, slug="first", name="Again")  # caught, but the transaction is doomed
    assert count(db, "organizations") == 0
