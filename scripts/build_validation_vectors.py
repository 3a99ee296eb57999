"""Produce ``conformance/validation-vectors.json``: what every product's ``isId(value, prefix)`` must answer.

Why the file exists: the five products share one ID format, and a value that one product mints and another
refuses (or one refuses and another stores) is the cross-product bug a shared format exists to prevent.
``id-vectors.json`` holds minting to the reference; this file holds validators to it.

The values and their intended verdicts come from ``validation_catalogue.py``.  This script asks
``agentfy.ids`` for each verdict and format, and writes nothing if the module and the catalogue disagree:
the file is the module's answers, checked against intentions written down separately.  Cases are sorted
(product, reason, value, prefix) and written one per line, all non-ASCII characters escaped, so the output
depends only on the catalogue and the module and a rerun gives the identical bytes
(``tests/ids/test_validation_vectors.py`` regenerates it and compares).

Regenerate: ``python scripts/build_validation_vectors.py [--output PATH]`` (no node needed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from agentfy.ids import (  # noqa: E402 - after the src path is set up
    CANONICAL,
    ID_MAX_LENGTH,
    ID_PREFIXES,
    ID_SUFFIX_ALPHABET,
    PRODUCT_LEGACY_ID_FORMATS,
    PRODUCTS,
    WordsFormat,
    id_format_of,
    is_id,
)
from agentfy.ids.registry import ID_PREFIXES_LONGEST_FIRST  # noqa: E402
from build_conformance import render  # noqa: E402
from validation_catalogue import ACCEPTED_REASONS, AGENTFY, REASONS, Intent, catalogue  # noqa: E402

OUT = ROOT / "conformance" / "validation-vectors.json"
FORMAT = "agentfy-validation-vectors/1"
Case = dict[str, object]


class CatalogueDisagreement(Exception):
    """``agentfy.ids`` and the catalogue's intended verdict differ: one of them is wrong, so nothing is written."""


def leading_prefix(value: str) -> str | None:
    """The longest registered prefix that ``value`` starts with, followed by '-': what ``--prefix-map`` maps.

    Every value another product must accept has its real prefix there, so a product whose registry differs
    can map Agentfy's prefixes onto its own without parsing the value.
    """
    return next((prefix for prefix in ID_PREFIXES_LONGEST_FIRST if value.startswith(prefix + "-")), None)


def ask(intent: Intent, product: str) -> Case:
    """The case for ``intent`` and ``product``: ``agentfy.ids``'s verdict, checked against the intended one."""
    found = id_format_of(intent.value, intent.prefix, product=product)
    valid = is_id(intent.value, intent.prefix, product=product)
    intended = product in intent.accepted
    shown = f"{product}: isId({json.dumps(intent.value)}, {json.dumps(intent.prefix)})"
    if valid != (found is not None):
        raise CatalogueDisagreement(f"{shown}: is_id says {valid} but id_format_of says {found}")
    if valid != intended:
        raise CatalogueDisagreement(f"{shown}: agentfy.ids says {valid}, the catalogue intends {intended} "
                                    f"({intent.accepted.get(product, intent.refused)})")
    if valid and product != AGENTFY and isinstance(found, WordsFormat) and isinstance(intent.value, str):
        head = intent.value.rsplit("-", len(found.dictionaries) + 1)[0]
        if leading_prefix(intent.value) != head:
            raise CatalogueDisagreement(f"{shown}: accepted with the prefix {head!r}, but the runner's "
                                        f"--prefix-map would take {leading_prefix(intent.value)!r} for it")
    return {
        "value": intent.value,
        "prefix": intent.prefix,
        "product": product,
        "valid": valid,
        "format": found.name if found is not None else None,
        "reason": intent.accepted.get(product, intent.refused),
    }


def build_cases() -> list[Case]:
    """Every intent asked of its products, without duplicates, sorted; every disagreement at once."""
    cases: dict[tuple[str, str, str], Case] = {}
    problems: list[str] = []
    for intent in catalogue():
        for product in intent.products:
            try:
                case = ask(intent, product)
            except CatalogueDisagreement as error:
                problems.append(str(error))
                continue
            reason = str(case["reason"])
            if reason not in REASONS or (reason in ACCEPTED_REASONS) != case["valid"]:
                problems.append(f"case {case}: reason {reason!r} does not fit its verdict")
            key = (product, json.dumps(intent.value, sort_keys=True), json.dumps(intent.prefix))
            if key in cases and cases[key]["reason"] != reason:
                problems.append(f"{key} is listed for {cases[key]['reason']!r} and for {reason!r}")
            cases[key] = case
    if problems:
        raise CatalogueDisagreement("\n".join(problems))
    return [cases[key] for key in sorted(cases, key=lambda k: (k[0], cases[k]["reason"], k[1], k[2]))]


def header(cases: list[Case]) -> dict[str, object]:
    used = {case["reason"] for case in cases}
    unused = set(REASONS) - used
    if unused:
        raise CatalogueDisagreement(f"reasons no case gives: {sorted(unused)}")
    formats = {CANONICAL.name: CANONICAL.description} | {
        fmt.name: fmt.description for legacy in PRODUCT_LEGACY_ID_FORMATS.values() for fmt in legacy}
    return {
        "format": FORMAT,
        "description": (
            "What isId(value, prefix) must return in each product: canonical, or one of that product's "
            "legacy formats. For every case call the product's validator with value (any JSON value) and "
            "prefix (null: no prefix given; Agentfy then accepts any registered prefix); it must return "
            "valid. format names the format a valid value is in; reason says why the verdict is what it is."
        ),
        "generator": "python scripts/build_validation_vectors.py",
        "runner": "node scripts/reference/run-validation-vectors.cjs --vectors <this file> --module <path> "
                  "--product <name> [--export isId] [--prefix-map <file>]",
        "alphabet": ID_SUFFIX_ALPHABET,
        "max_length": ID_MAX_LENGTH,
        "products": list(PRODUCTS),
        "prefixes": sorted(ID_PREFIXES),
        "formats": formats,
        "legacy_formats": {product: [fmt.name for fmt in legacy]
                           for product, legacy in PRODUCT_LEGACY_ID_FORMATS.items()},
        "reasons": dict(REASONS),
        "case_count": len(cases),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUT, help=f"where to write (default: {OUT})")
    args = parser.parse_args(argv)
    try:
        cases = build_cases()
        document = render(header(cases), cases)
    except CatalogueDisagreement as error:
        print(f"build_validation_vectors: nothing written:\n{error}", file=sys.stderr)
        return 1
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(document, encoding="ascii")
    valid = sum(1 for case in cases if case["valid"])
    print(f"wrote {args.output}: {len(cases)} cases ({valid} valid, {len(cases) - valid} refused) over "
          f"{len(PRODUCTS)} products and {len(REASONS)} reasons")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
