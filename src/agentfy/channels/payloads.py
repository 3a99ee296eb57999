"""Reading a platform's JSON body into its model: a body that is not the expected shape is a 422 naming the
first bad field and what was expected, never a 500, whatever it holds (missing fields, wrong types, integers
beyond 64 bits, deep nesting — the last one already refused by the gateway's input limits)."""

from __future__ import annotations

import math
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from agentfy.errors import ApiError

Model = TypeVar("Model", bound=BaseModel)


def parse_body(model: type[Model], body: bytes) -> Model:
    try:
        return model.model_validate_json(body)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        field = ".".join(str(part) for part in first.get("loc", ())) or "body"
        value = first.get("input")
        shown = value if isinstance(value, str | int | bool) or (isinstance(value, float) and math.isfinite(value)) \
            else None
        raise ApiError(422, "invalid_input", f"{field}: {first.get('msg', 'invalid')}", field=field,
                       value=shown, expected=f"a {model.__name__} as the platform sends it") from None
