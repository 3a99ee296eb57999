"""``agentfy channels``: approve a pairing code once, allow a sender, list, set the policy; refusals are usage
errors naming the problem (both engines)."""

from __future__ import annotations

from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.store.db import Database
from agentfy.store.repos import channel_access
from tests.helpers.tenants import make_tenant

runner = CliRunner()


def test_the_cli_approves_a_code_once_allows_lists_and_sets_the_policy(db_url: str) -> None:
    db = Database(db_url)
    try:
        acme = make_tenant(db, "acme", agent_key="bot")
        make_tenant(db, "globex", agent_key="bot")
        assert acme.bot is not None
        with db.transaction() as tx:
            code = channel_access.request_pairing(tx, acme.scope, acme.bot.id, "telegram", "77")
        assert code is not None
        base = ["--agent", "bot", "--database-url", db_url]
        foreign = runner.invoke(app, ["channels", "pairing", "approve", code, "--org", "globex", *base])
        assert foreign.exit_code == 2 and "pairing code" in foreign.output
        approved = runner.invoke(app, ["channels", "pairing", "approve", code.lower(), "--org", "acme", *base])
        assert approved.exit_code == 0, approved.output
        assert "allowed telegram sender 77" in approved.output
        again = runner.invoke(app, ["channels", "pairing", "approve", code, "--org", "acme", *base])
        assert again.exit_code == 2 and "already used" in again.output
        allowed = runner.invoke(app, ["channels", "allow", "88", "--platform", "discord", "--org", "acme", *base])
        assert allowed.exit_code == 0, allowed.output
        bad = runner.invoke(app, ["channels", "allow", "-8", "--org", "acme", *base])
        assert bad.exit_code == 2 and "sender_id" in bad.output
        policy = runner.invoke(app, ["channels", "policy", "--dm", "pairing", "--org", "acme", *base])
        assert policy.exit_code == 0 and "dm_policy: pairing" in policy.output
        wrong = runner.invoke(app, ["channels", "policy", "--dm", "everyone", "--org", "acme", *base])
        assert wrong.exit_code == 2 and "dm_policy" in wrong.output
        listed = runner.invoke(app, ["channels", "list", "--org", "acme", *base])
        assert listed.exit_code == 0, listed.output
        assert "dm_policy: pairing" in listed.output and "77" in listed.output and "88" in listed.output
        missing = runner.invoke(app, ["channels", "list", "--org", "nope", *base])
        assert missing.exit_code == 2
    finally:
        db.dispose()
