"""Organization roles: the one type, the one order and the one validator every layer uses.

A role is what a member of an organization, and every key acting for them, may do: ``owner`` > ``admin`` >
``operator`` > ``member``, each with every permission of the roles below it.  The database's CHECK
constraints, the request models' ``enum``, the store's validation, the request context and the permission
rules all take the set and the order from here, so adding or reordering a role is one edit.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal, TypeGuard, get_args

Role = Literal["owner", "admin", "operator", "member"]
#: Every role, highest first (the order error messages list them in).
ROLES: Final[tuple[Role, ...]] = get_args(Role)
_RANK: Final[Mapping[str, int]] = MappingProxyType({role: len(ROLES) - 1 - place for place, role in enumerate(ROLES)})


class InvalidRoleError(ValueError):
    """A value used as a role is not one; names the field, the value and the roles there are."""

    def __init__(self, value: object, *, field: str = "role") -> None:
        super().__init__(f"role {value!r} is unknown; expected one of {', '.join(ROLES)}")
        self.value = value
        self.field = field


def is_role(value: object) -> TypeGuard[Role]:
    """Whether ``value`` is one of :data:`ROLES`."""
    return isinstance(value, str) and value in _RANK


def parse_role(value: object, *, field: str = "role") -> Role:
    """``value`` itself if it is a role, else :class:`InvalidRoleError`."""
    if is_role(value):
        return value
    raise InvalidRoleError(value, field=field)


def role_rank(role: str) -> int:
    """A role's place in the order: ``member`` 0 up to ``owner`` 3, so ``role_rank(a) >= role_rank(b)`` says
    ``a`` may do all that ``b`` may.  :class:`InvalidRoleError` for a value that is no role."""
    try:
        return _RANK[role]
    except KeyError:
        raise InvalidRoleError(role) from None


def roles_from(lowest: Role) -> frozenset[Role]:
    """``lowest`` and every role above it."""
    return frozenset(role for role in ROLES if _RANK[role] >= _RANK[lowest])
