"""Schemathesis hooks of ``make fuzz`` (loaded through ``SCHEMATHESIS_HOOKS``): the positive-data check that
excuses exactly the refusals of :data:`tests.gateway.contract_rules.SCHEMA_INEXPRESSIBLE`, as the in-repo test
does; the fuzz driver turns Schemathesis's own ``positive_data_acceptance`` off in its favour."""

from __future__ import annotations

from typing import Any

import schemathesis

from tests.gateway.contract_rules import positive_data_acceptance


@schemathesis.check
def positive_data_acceptance_with_excused_rules(ctx: Any, response: Any, case: schemathesis.Case) -> bool | None:
    """Schema-valid data is accepted, except for the refusals no JSON schema can state."""
    return positive_data_acceptance(ctx, response, case)
