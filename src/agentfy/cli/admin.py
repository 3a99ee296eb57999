"""``agentfy admin rotate-key``: the platform-admin API key."""

from __future__ import annotations

import typer

from agentfy.cli.common import err, open_database, out
from agentfy.cli.options import DatabaseUrlOption
from agentfy.gateway.bootstrap import rotate_admin_key

group = typer.Typer(help="Platform administration: the platform-admin API key.", no_args_is_help=True)


@group.command("rotate-key")
def admin_rotate_key(database_url: DatabaseUrlOption = None) -> None:
    """Issue a new platform-admin API key and revoke every other one, in one transaction.

    The new key is printed once (only its hash is stored): store it now. Running servers refuse the old keys
    from the moment this commits. If $AGENTFY_ADMIN_API_KEY holds the old key, set it to the new one.
    """
    db = open_database(database_url)
    try:
        key, revoked = rotate_admin_key(db)
    finally:
        db.dispose()
    out.print("[bold]new platform-admin API key (shown once; store it now):[/bold]", highlight=False)
    out.print(key, highlight=False, soft_wrap=True)
    err.print(f"revoked {len(revoked)} earlier platform-admin key(s)" + (f": {', '.join(revoked)}" if revoked else ""),
              highlight=False, soft_wrap=True)
