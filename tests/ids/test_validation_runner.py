"""The Node runner other products copy, run against the reference validator and against broken copies of it.

``scripts/reference/run-validation-vectors.cjs`` checks a validator against
``conformance/validation-vectors.json``.  A runner that always passed would prove nothing, so it is run
against ``reference-validator.cjs`` (written from the format's tables, not from ``agentfy.ids``), where every
case must pass, and against copies of that validator broken the ways products drift (trimming, case folding,
shape-only words, a forgotten retired prefix, ...), where it must fail and name the failing case.

Needs ``node``: skipped with the reason when it is missing, except under ``CI=true``, where it must run.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentfy.ids import ID_PREFIXES, PRODUCTS
from tests.helpers.databases import IN_CI

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "conformance" / "validation-vectors.json"
REFERENCE_DIR = ROOT / "scripts" / "reference"
RUNNER = REFERENCE_DIR / "run-validation-vectors.cjs"
REFERENCE = REFERENCE_DIR / "reference-validator.cjs"
CASES: list[dict[str, Any]] = json.loads(VECTORS.read_text(encoding="ascii"))["cases"]
FAILURE = re.compile(r"^(FAIL case (\d+) \[([a-z-]+)\] (\S+) .*)$", re.MULTILINE)


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        if IN_CI:
            pytest.fail("node is not on PATH; under CI=true the validation runner must run")
        pytest.skip("node is not on PATH: the Node validation runner cannot be checked (install Node 18+)")
    return found


def run(node: str, module: Path, product: str, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [node, str(RUNNER), "--vectors", str(VECTORS), "--module", str(module), "--product", product,
               *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("product", PRODUCTS)
def test_the_reference_validator_passes_every_case(node: str, product: str) -> None:
    result = run(node, REFERENCE, product, "--export", f"byProduct.{product}")
    assert result.returncode == 0, result.stderr
    count = sum(1 for case in CASES if case["product"] == product)
    assert result.stdout.strip() == f"{product}: all {count} cases pass ({VECTORS})"


def test_the_default_export_is_is_id(node: str) -> None:
    result = run(node, REFERENCE, "agentfy")
    assert result.returncode == 0, result.stderr


def broken_copy(tmp_path: Path, old: str, new: str) -> Path:
    """The reference validator with ``old`` replaced by ``new`` (exactly once), loadable from ``tmp_path``."""
    source = REFERENCE.read_text(encoding="utf-8")
    assert source.count(old) == 1, f"the reference validator no longer contains {old!r} exactly once"
    assert source.count("__dirname") == 1
    source = source.replace(old, new).replace("__dirname", json.dumps(str(REFERENCE_DIR)))
    copy = tmp_path / "broken-validator.cjs"
    copy.write_text(source, encoding="utf-8")
    return copy


LENGTH_CHECK = "if (typeof value !== 'string' || value.length > MAX_LENGTH) return false"

#: (what the copy gets wrong, product, text replaced, replacement, a reason that must then fail)
BREAKAGES = [
    ("trims whitespace", "agentfy", LENGTH_CHECK, LENGTH_CHECK + "; value = value.trim()", "whitespace"),
    ("folds case", "bonsite", LENGTH_CHECK, LENGTH_CHECK + "; value = value.toLowerCase()", "upper-case"),
    ("normalises Unicode", "securify", LENGTH_CHECK, LENGTH_CHECK + "; value = value.normalize('NFKC')",
     "non-ascii-digit"),
    ("decodes percent-encoding", "agentfy", LENGTH_CHECK,
     LENGTH_CHECK + "; try { value = decodeURIComponent(value) } catch {}", "percent-encoding"),
    ("checks only the shape of words", "agentfy", "dictionaries[i] === ANY_WORD ?", "true ?",
     "look-alike-word"),
    ("accepts i, l, o and u", "shiffty", "const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz'",
     "const CROCKFORD = '0123456789abcdefghijklmnopqrstuvwxyz'", "suffix-outside-crockford"),
    ("still accepts organization", "agentfy", "  'agent', 'agent-config-permission',",
     "  'organization', 'agent', 'agent-config-permission',", "retired-prefix"),
    ("accepts the nil UUID", "agentfy", " && value !== NIL_UUID", "", "nil-uuid"),
    ("has no length limit", "shiffty", "value.length > MAX_LENGTH", "false", "too-long"),
    ("accepts a value from a string's wrapper", "store-deputy", "typeof value !== 'string'",
     "(value = String(value), false)", "not-a-string"),
]


@pytest.mark.parametrize(("drift", "product", "old", "new", "reason"), BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_a_broken_validator_fails_and_the_runner_names_the_case(
        node: str, tmp_path: Path, drift: str, product: str, old: str, new: str, reason: str) -> None:
    result = run(node, broken_copy(tmp_path, old, new), product, "--export", f"byProduct.{product}")
    assert result.returncode == 1, f"a validator that {drift} passed:\n{result.stdout}{result.stderr}"
    failures = FAILURE.findall(result.stderr)
    assert failures, result.stderr
    for line, index, named_reason, named_product in failures:
        case = CASES[int(index)]
        assert case["reason"] == named_reason and case["product"] == named_product == product, line
        assert f"({json.dumps(case['value'], separators=(',', ':'))}, " in line, "the line shows the value"
    assert reason in {named for _, _, named, _ in failures}, f"no {reason} case failed:\n{result.stderr}"
    assert re.search(rf"^{product}: \d+ of \d+ cases failed \(.*\b{reason}: \d+", result.stderr, re.MULTILINE)


PREFIX_MAP = {prefix: {"user": "person", "org": "company"}.get(prefix, f"own-{prefix}") for prefix in ID_PREFIXES}


def own_registry_validator(tmp_path: Path, product: str) -> Path:
    """A product whose registry has its own prefixes only (PREFIX_MAP's targets), as most products' do."""
    module = tmp_path / "own-registry.cjs"
    module.write_text(
        f"const {{ validatorFor }} = require({json.dumps(str(REFERENCE))})\n"
        f"exports.isId = validatorFor({json.dumps(product)}, new Set({json.dumps(sorted(PREFIX_MAP.values()))}))\n",
        encoding="utf-8")
    return module


@pytest.mark.parametrize("product", [p for p in PRODUCTS if p != "agentfy"])
def test_a_product_with_its_own_registry_passes_through_the_prefix_map(
        node: str, tmp_path: Path, product: str) -> None:
    module = own_registry_validator(tmp_path, product)
    prefix_map = tmp_path / "prefix-map.json"
    prefix_map.write_text(json.dumps(PREFIX_MAP), encoding="utf-8")
    mapped = run(node, module, product, "--prefix-map", str(prefix_map))
    assert mapped.returncode == 0, mapped.stderr
    # The 80-character value (Shiffty's longest) grows past the limit with a longer prefix: skipped, and said so.
    assert mapped.stdout.strip().endswith(
        "; 1 skipped: the prefix map moved their value across the 80-character limit"), mapped.stdout
    unmapped = run(node, module, product)
    assert unmapped.returncode == 1 and "threw Error: ID prefix \"user\" is not registered" in unmapped.stderr


def test_a_prefix_map_sending_two_prefixes_to_one_is_refused(node: str, tmp_path: Path) -> None:
    prefix_map = tmp_path / "prefix-map.json"
    prefix_map.write_text(json.dumps({"user": "person", "org": "person"}), encoding="utf-8")
    result = run(node, REFERENCE, "bonsite", "--export", "byProduct.bonsite", "--prefix-map", str(prefix_map))
    assert result.returncode == 2 and "two prefixes map to the same one" in result.stderr


@pytest.mark.parametrize(("arguments", "message"), [
    (["--product", "nope"], 'unknown product "nope"; the file has agentfy, bonsite'),
    (["--product", "agentfy", "--export", "missing"], "exports no function missing"),
])
def test_usage_errors_exit_2_with_the_problem(node: str, arguments: list[str], message: str) -> None:
    command = [node, str(RUNNER), "--vectors", str(VECTORS), "--module", str(REFERENCE), *arguments]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2 and message in result.stderr and "usage:" in result.stderr
