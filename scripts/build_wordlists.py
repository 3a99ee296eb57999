"""Produce ``src/agentfy/ids/data/human-id-4.1.3.json`` from the npm package ``human-id@4.1.3``.

Why a script: the dictionaries must be the package's exported arrays, in the package's own order, byte for
byte, or minted IDs differ from the TypeScript reference.  Copying them by hand is how that goes wrong, so
this script installs the pinned package with npm, loads it with Node, and records where the words came
from (the npm integrity hash of the tarball) and a checksum of the result that the test-suite re-checks.

Run: ``python scripts/build_wordlists.py`` (needs node and npm; the result is committed, so CI does not).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "scripts" / "reference"
OUT = ROOT / "src" / "agentfy" / "ids" / "data" / "human-id-4.1.3.json"
WORD = re.compile(r"[a-z]+")

DUMP = """
const h = require('human-id');
const pkg = require('human-id/package.json');
process.stdout.write(JSON.stringify({version: pkg.version, adjectives: h.adjectives, nouns: h.nouns, verbs: h.verbs}));
"""


def words_checksum(adjectives: list[str], nouns: list[str], verbs: list[str]) -> str:
    """SHA-256 over the three lists joined by newlines; the same function is used by the test-suite."""
    text = "\n".join(["adjectives", *adjectives, "nouns", *nouns, "verbs", *verbs])
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def main() -> int:
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent"], cwd=REFERENCE, check=True)
    raw = json.loads(subprocess.run(["node", "-e", DUMP], cwd=REFERENCE, check=True,
                                    capture_output=True, text=True).stdout)
    if raw["version"] != "4.1.3":
        print(f"expected human-id 4.1.3, npm installed {raw['version']}", file=sys.stderr)
        return 1
    lock = json.loads((REFERENCE / "package-lock.json").read_text())
    integrity = lock["packages"]["node_modules/human-id"]["integrity"]

    def clean(words: list[str]) -> list[str]:
        lowered = [w.lower() for w in words]
        return [w for w in lowered if WORD.fullmatch(w)]

    adjectives, nouns, verbs = clean(raw["adjectives"]), clean(raw["nouns"]), clean(raw["verbs"])
    document = {
        "source": "npm human-id@4.1.3 (exports adjectives, nouns, verbs), lower-cased, non-[a-z] words dropped",
        "npm_integrity": integrity,
        "sha256": words_checksum(adjectives, nouns, verbs),
        "adjectives": adjectives,
        "nouns": nouns,
        "verbs": verbs,
    }
    OUT.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(adjectives)} adjectives, {len(nouns)} nouns, "
          f"{len(verbs)} verbs, sha256 {document['sha256']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
