"""``agentfy.ids`` against ``conformance/validation-vectors.json``, so the published file and the module never drift.

The file tells every product what its ``isId(value, prefix)`` must answer.  It is generated from this module
by ``scripts/build_validation_vectors.py`` (which also checks each verdict against an intention written down
separately); these tests hold the module to the committed file, hold the file to what the other products
need from it, and regenerate it to show the bytes are reproducible.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentfy.ids import (
    CANONICAL,
    ID_MAX_LENGTH,
    ID_PREFIXES,
    ID_SUFFIX_ALPHABET,
    PRODUCT_LEGACY_ID_FORMATS,
    PRODUCTS,
    WordsFormat,
    explain_id,
    id_format_of,
    is_id,
)
from agentfy.ids.registry import ID_PREFIXES_LONGEST_FIRST

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "conformance" / "validation-vectors.json"
GENERATOR = ROOT / "scripts" / "build_validation_vectors.py"
CASE_FIELDS = ["value", "prefix", "product", "valid", "format", "reason"]
#: The refusals every product must show it makes, each for its own reason.
REQUIRED_REFUSALS = {
    "wrong-prefix", "unregistered-prefix", "retired-prefix", "look-alike-word", "suffix-outside-crockford",
    "upper-case", "whitespace", "percent-encoding", "unicode-look-alike", "non-ascii-digit", "nul-character",
    "nil-uuid", "too-long", "empty", "not-a-string", "other-product-format",
}


def _no_constants(name: str) -> None:
    raise ValueError(f"{VECTORS.name} holds {name}, which is not JSON")


DOCUMENT: dict[str, Any] = json.loads(VECTORS.read_text(encoding="ascii"), parse_constant=_no_constants)
CASES: list[dict[str, Any]] = DOCUMENT["cases"]


def _call(case: dict[str, Any]) -> str:
    return f"{case['product']}: is_id({case['value']!r}, {case['prefix']!r}) [{case['reason']}]"


def test_agentfy_ids_gives_every_case_its_verdict_and_format() -> None:
    wrong = []
    for index, case in enumerate(CASES):
        valid = is_id(case["value"], case["prefix"], product=case["product"])
        found = id_format_of(case["value"], case["prefix"], product=case["product"])
        name = found.name if found is not None else None
        if (valid, name) != (case["valid"], case["format"]):
            wrong.append(f"case {index} {_call(case)}: got {valid} ({name}), the file says "
                         f"{case['valid']} ({case['format']})")
    assert not wrong, f"{len(wrong)} cases disagree:\n" + "\n".join(wrong[:30])


def test_explain_id_gives_the_same_verdict_and_names_a_problem_for_every_refusal() -> None:
    wrong = []
    for index, case in enumerate(CASES):
        explanation = explain_id(case["value"], case["prefix"], product=case["product"])
        if explanation.valid != case["valid"] or bool(explanation.problems) == case["valid"]:
            wrong.append(f"case {index} {_call(case)}: {explanation.as_dict()}")
    assert not wrong, "\n".join(wrong[:30])


def test_the_file_regenerates_byte_identically(tmp_path: Path) -> None:
    committed = VECTORS.read_bytes()
    for hash_seed in ("0", "1"):  # string hashing must not reach the order of anything written
        output = tmp_path / f"vectors-{hash_seed}.json"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        result = subprocess.run([sys.executable, str(GENERATOR), "--output", str(output)],
                                capture_output=True, text=True, env=env, check=False)
        assert result.returncode == 0, result.stderr
        assert output.read_bytes() == committed, (
            f"regenerating with PYTHONHASHSEED={hash_seed} changed {VECTORS.name}; run "
            f"`python scripts/build_validation_vectors.py` and review the diff")


def test_header_describes_the_cases() -> None:
    assert DOCUMENT["format"] == "agentfy-validation-vectors/1"
    assert DOCUMENT["case_count"] == len(CASES)
    assert 2000 <= len(CASES) <= 5000
    assert DOCUMENT["products"] == list(PRODUCTS)
    assert DOCUMENT["prefixes"] == sorted(ID_PREFIXES)
    assert DOCUMENT["alphabet"] == ID_SUFFIX_ALPHABET
    assert DOCUMENT["max_length"] == ID_MAX_LENGTH
    assert DOCUMENT["legacy_formats"] == {product: [fmt.name for fmt in formats]
                                          for product, formats in PRODUCT_LEGACY_ID_FORMATS.items()}
    assert set(DOCUMENT["formats"]) == {"canonical", *(name for names in DOCUMENT["legacy_formats"].values()
                                                       for name in names)}
    assert {case["reason"] for case in CASES} == set(DOCUMENT["reasons"]), "every reason is described and used"


def test_every_case_has_the_six_fields_and_cases_are_unique_and_sorted() -> None:
    assert all(list(case) == CASE_FIELDS for case in CASES)
    keys = [(case["product"], json.dumps(case["value"], sort_keys=True), json.dumps(case["prefix"]))
            for case in CASES]
    assert len(set(keys)) == len(keys), "a value is asked twice with the same prefix of the same product"
    order = [(case["product"], case["reason"], key[1], key[2]) for case, key in zip(CASES, keys, strict=True)]
    assert order == sorted(order)


def test_every_product_is_asked_everything() -> None:
    for product in PRODUCTS:
        cases = [case for case in CASES if case["product"] == product]
        refusals = {case["reason"] for case in cases if not case["valid"]}
        required = REQUIRED_REFUSALS - ({"unregistered-prefix"} if product != "agentfy" else set())
        assert required <= refusals, f"{product} lacks {sorted(required - refusals)}"
        canonical = {case["prefix"] for case in cases if case["format"] == "canonical"}
        assert not ID_PREFIXES - canonical, f"{product}: no canonical case for {sorted(ID_PREFIXES - canonical)}"
        assert any(case["prefix"] is None and case["valid"] for case in cases)
        formats = {case["format"] for case in cases if case["valid"]}
        own = {fmt.name for fmt in PRODUCT_LEGACY_ID_FORMATS[product]} - {"securify-legacy-hex"}
        assert own <= formats, f"{product}: legacy formats without an accepted case: {sorted(own - formats)}"


def test_securify_hex_is_canonical_everywhere_and_store_deputy_alone_takes_i_l_o_u() -> None:
    hex_cases = [case for case in CASES if case["reason"] == "canonical-hex-suffix"]
    assert hex_cases and all(case["valid"] and case["format"] == "canonical" for case in hex_cases)
    alnum = "user-calm-rivers-k8m4p2d7n9xi"
    verdicts = {case["product"]: case["valid"] for case in CASES if case["value"] == alnum}
    assert verdicts == {product: product == "store-deputy" for product in PRODUCTS}


def test_the_file_has_non_string_json_values_and_only_ascii_bytes() -> None:
    kinds = {type(case["value"]).__name__ for case in CASES}
    assert {"int", "float", "bool", "NoneType", "list", "dict", "str"} <= kinds
    assert VECTORS.read_bytes().isascii(), "non-ASCII characters are written as \\u escapes"


def test_another_products_accepted_values_start_with_their_real_prefix() -> None:
    """What makes the runner's --prefix-map exact: a value another product accepts starts with its prefix."""
    formats = {CANONICAL.name: CANONICAL} | {fmt.name: fmt for legacy in PRODUCT_LEGACY_ID_FORMATS.values()
                                             for fmt in legacy}
    for case in CASES:
        if case["product"] == "agentfy" or not case["valid"]:
            continue
        fmt = formats[case["format"]]
        assert isinstance(fmt, WordsFormat), "only Agentfy accepts a value without a prefix (a bare UUID)"
        head = case["value"].rsplit("-", len(fmt.dictionaries) + 1)[0]
        leading = next(p for p in ID_PREFIXES_LONGEST_FIRST if case["value"].startswith(p + "-"))
        assert head == leading, _call(case)


@pytest.mark.parametrize("value", ["user-calm-river-k8m4p2d7n9x3", "organization-silver-days-zxy8s9bpp6hp"])
def test_the_cases_people_get_wrong_are_refused_by_agentfy(value: str) -> None:
    cases = [case for case in CASES if case["value"] == value and case["product"] == "agentfy"]
    assert cases and not any(case["valid"] for case in cases)
