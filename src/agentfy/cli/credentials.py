"""``agentfy credentials set | list | show | delete``: an organization's named secrets, straight in the database.

For the operator of the installation (who has the database and the credentials key, and may have no API key);
the same store and rules as ``/v1/credentials`` (:mod:`agentfy.store.repos.credentials`).  A secret is read from
standard input, a hidden prompt, or ``--from-env VAR`` — never from the command line, which every user of the
machine can read (``ps``) — and is never printed.  The key is the one ``agentfy serve`` uses
(``$AGENTFY_CREDENTIALS_KEY``, or the key file beside an embedded database).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from agentfy.cli.common import fail_usage, open_database, out, resolve_settings
from agentfy.cli.options import DatabaseUrlOption
from agentfy.cli.usage import table
from agentfy.identity import Scope
from agentfy.keys import credentials_cipher
from agentfy.settings import Settings
from agentfy.store.db import Database
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import credentials, orgs
from agentfy.store.repos.credentials import KEY_ENV, CredentialCipher, CredentialKeyError

group = typer.Typer(help="An organization's credentials (API keys of model providers): stored encrypted, never "
                         "shown.", no_args_is_help=True)

OrgOption = Annotated[str, typer.Option("--org", help="The organization's slug.")]
NameArgument = Annotated[str, typer.Argument(help="The credential's name: a lower-case slug, e.g. openai.",
                                             show_default=False)]


@contextmanager
def organization(database_url: str | None, org: str) -> Iterator[tuple[Settings, Database, Scope]]:
    """The settings, the database and the scope of organization ``org`` (a usage error if there is none)."""
    settings = resolve_settings(database_url=database_url)
    db = open_database(None, settings=settings)
    try:
        with db.transaction(write=False) as tx:
            try:
                scope = Scope(orgs.get_organization_by_slug(tx, org).id)
            except NotFoundError:
                raise fail_usage(f"there is no organization {org!r}") from None
        yield settings, db, scope
    finally:
        db.dispose()


def cipher(settings: Settings, db: Database) -> CredentialCipher:
    """The credentials key ``agentfy serve`` uses on this database, or a usage error naming the setting."""
    try:
        found = credentials_cipher(settings, db.url, create=True, required=True)
    except CredentialKeyError as error:
        raise fail_usage(f"no usable credentials key: {error} (${KEY_ENV})") from None
    assert found is not None  # required
    return found


def checked_name(name: str) -> str:
    problem = credentials.name_problem(name)
    if problem is not None:
        raise fail_usage(f"invalid credential name {name!r}: {problem}")
    return name


def read_secret(from_env: str | None) -> str:
    """The secret: from the variable ``from_env``, else standard input when it is not a terminal (a pipe, a
    file), else a hidden prompt.  Trailing line breaks are not part of it."""
    if from_env is not None:
        if from_env not in os.environ:
            raise fail_usage(f"--from-env {from_env}: the variable is not set")
        secret = os.environ[from_env]
    elif not sys.stdin.isatty():
        secret = sys.stdin.read()
    else:
        secret = typer.prompt("secret", hide_input=True, confirmation_prompt=True)
    secret = secret.rstrip("\r\n")
    if not secret:
        raise fail_usage("the secret is empty")
    return secret


@group.command("set")
def set_credential(
    name: NameArgument, org: OrgOption,
    from_env: Annotated[str | None, typer.Option("--from-env", metavar="VAR", show_default=False,
                                                 help="Read the secret from this environment variable.")] = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Store a secret under NAME, or replace (rotate) the one stored there.

    The secret is read from standard input (`agentfy credentials set openai --org acme < key.txt`), a hidden
    prompt, or --from-env VAR: never from the command line, which every user of the machine can read.
    """
    checked_name(name)
    secret = read_secret(from_env)
    with organization(database_url, org) as (settings, db, scope):
        key = cipher(settings, db)
        with db.transaction() as tx:
            rotated = name in credentials.list_credential_names(tx, scope)
            credentials.put_credential(tx, scope, key, name, secret.encode("utf-8"))
    out.print(f"{'rotated' if rotated else 'stored'} credential {name!r} of organization {org!r}",
              highlight=False, markup=False)


def _print_infos(infos: list[credentials.CredentialInfo]) -> None:
    """Name, when stored, when last rotated ('-': never): what may be shown of credentials."""
    out.print(table(("name", "created_at", "rotated_at"),
                    [(info.name, info.created_at, info.rotated_at or "-") for info in infos]), highlight=False,
              markup=False, soft_wrap=True)


@group.command("list")
def list_credentials(org: OrgOption, database_url: DatabaseUrlOption = None) -> None:
    """List the organization's credentials: names, when each was stored and last rotated; never the secrets."""
    with organization(database_url, org) as (_, db, scope), db.transaction(write=False) as tx:
        infos = credentials.list_credentials(tx, scope)
    _print_infos(infos)


@group.command("show")
def show_credential(name: NameArgument, org: OrgOption, database_url: DatabaseUrlOption = None) -> None:
    """Show a credential's name, when it was stored and last rotated (never the secret); unknown is a usage
    error."""
    with organization(database_url, org) as (_, db, scope), db.transaction(write=False) as tx:
        try:
            info = credentials.credential_info(tx, scope, checked_name(name))
        except NotFoundError:
            raise fail_usage(f"there is no credential {name!r} in organization {org!r}") from None
    _print_infos([info])


@group.command("delete")
def delete_credential(name: NameArgument, org: OrgOption, database_url: DatabaseUrlOption = None) -> None:
    """Delete a credential: agents naming it cannot reach their model until one is stored again."""
    with organization(database_url, org) as (_, db, scope), db.transaction() as tx:
        try:
            credentials.delete_credential(tx, scope, checked_name(name))
        except NotFoundError:
            raise fail_usage(f"there is no credential {name!r} in organization {org!r}") from None
    out.print(f"deleted credential {name!r} of organization {org!r}", highlight=False, markup=False)
