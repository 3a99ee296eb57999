"""The ``agentfy`` command's entry point (also ``python -m agentfy``): a guard in front of :mod:`agentfy.cli`.

``pip install agentfy`` installs :mod:`agentfy.ids` alone, which needs only the standard library.  The command
needs the ``server`` extra (typer, SQLAlchemy, FastAPI, …) and a PostgreSQL database the ``postgres`` extra
(psycopg).  Without them the command says which extra to install, in one line on stderr, and exits 1 instead of
showing an import traceback.  A missing ``agentfy`` module is a broken installation, not a missing extra, and
is raised as usual.
"""

from __future__ import annotations

import sys
from typing import Final, NoReturn

SERVER_EXTRA_NEEDED: Final = "the agentfy command needs the server extra: pip install 'agentfy[server]'"
POSTGRES_EXTRA_NEEDED: Final = "PostgreSQL needs the postgres extra: pip install 'agentfy[postgres]'"
_POSTGRES_MODULES: Final = frozenset({"psycopg"})


def _missing_dependency(error: ModuleNotFoundError) -> str | None:
    """The top-level name of the missing third-party module, or None when the missing module is agentfy's."""
    name = (error.name or "").partition(".")[0]
    return None if name in ("", "agentfy") else name


def _fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(1)


def main() -> None:
    """Run :func:`agentfy.cli.main`, or explain which extra is missing."""
    try:
        from agentfy import cli  # noqa: PLC0415 - importing it is what needs the server extra
    except ModuleNotFoundError as error:
        missing = _missing_dependency(error)
        if missing is None:
            raise
        _fail(f"{SERVER_EXTRA_NEEDED} (no module named {missing!r})")
    try:
        cli.main()
    except ModuleNotFoundError as error:  # SQLAlchemy imports the driver when a PostgreSQL URL is opened
        if _missing_dependency(error) not in _POSTGRES_MODULES:
            raise
        _fail(POSTGRES_EXTRA_NEEDED)


if __name__ == "__main__":
    main()
