"""The one label rule (``agentfy.store.inputs.label_problem``) that the store's identity columns and the
permission policy's sender checks share: what it refuses, and that both sides refuse exactly the same."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.permissions.senders import identity_problem, is_person, require_identity
from agentfy.store.errors import InvalidInputError
from agentfy.store.inputs import LABEL_MAX_LENGTH, check_label, label_problem
from agentfy.store.repos._common import require_label

REFUSED_CATEGORIES = {"Cc", "Cs", "Zl", "Zp"}


@given(st.text(alphabet=st.characters(codec=None), max_size=LABEL_MAX_LENGTH))
def test_a_label_is_refused_exactly_when_it_holds_a_control_character(text: str) -> None:
    refused = any(unicodedata.category(c) in REFUSED_CATEGORIES for c in text)
    assert (label_problem(text, allow_empty=True) is not None) == refused
    # the permission policy and the store agree on every string
    assert identity_problem(text) == label_problem(text)


@pytest.mark.parametrize(("value", "problem"), [
    ("line\nbreak", "U+000A at position 4"),
    ("tab\there", "U+0009 at position 3"),
    ("nul\x00", "NUL character at position 3"),
    ("lone\udc00", "lone surrogate (U+DC00) at position 4"),
    ("para\u2029graph", "U+2029 at position 4"),
    ("del\x7f", "U+007F at position 3"),
    ("", "must not be empty"),
    ("x" * (LABEL_MAX_LENGTH + 1), f"at most {LABEL_MAX_LENGTH}"),
    (42, "expected a string, got int"),
])
def test_a_refused_label_names_the_field_the_value_and_the_problem(value: object, problem: str) -> None:
    for check in (lambda v: check_label(v, "sender_id"), lambda v: require_label(v, field="sender_id"),
                  lambda v: require_identity(v, "sender_id")):
        with pytest.raises(InvalidInputError, match="sender_id") as refused:
            check(value)
        assert problem in str(refused.value)
        assert refused.value.field == "sender_id"
    assert not is_person(value if isinstance(value, str) else None)


@pytest.mark.parametrize("value", ["1234567", "group:telegram:-100", "Zoë · 東京", "subagent:task-1"])
def test_ordinary_labels_pass_unchanged(value: str) -> None:
    assert check_label(value, "user_id") is value
    assert require_identity(value, "user_id") is value


def test_allow_empty_and_max_length_are_the_callers() -> None:
    assert check_label("", "user_id_scope", allow_empty=True) == ""
    with pytest.raises(InvalidInputError, match="at most 50"):
        check_label("x" * 51, "kind", max_length=50)
