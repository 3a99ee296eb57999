"""What ``conformance/validation-vectors.json`` asks of a validator, and the verdict each product must give.

Validators are where the five products drift: one accepts an upper-case suffix, another trims a newline, a
third checks only the shape (and accepts ``river``), a fourth forgets that ``org`` replaced ``organization``.
This catalogue lists values built to catch each such drift, with the verdict the format's rules intend for
every product (``isId(value, prefix)``: canonical, or that product's legacy formats).  The intended verdicts
are written down here independently of ``agentfy.ids``; ``build_validation_vectors.py`` asks the module and
refuses to write the file if the two disagree.

Portability: the other products keep their own prefix registries.  So a value that any product other than
Agentfy must *accept* always carries one of Agentfy's registered prefixes (a product maps them onto its own
with the runner's ``--prefix-map``), and the refusals that depend on Agentfy's registry (unregistered and
retired prefixes asked with no prefix) are asked of Agentfy only.

Values come from fixed literals and from a SHA-256 counter stream, never from a random generator, so the
catalogue is the same on every run and every machine.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from agentfy.ids import ID_PREFIXES, ID_SUFFIX_ALPHABET, ID_WORDS, NIL_UUID, PRODUCTS, RENAMED_PREFIXES, format_id
from agentfy.ids.constants import HEX_ALPHABET, ID_MAX_LENGTH
from agentfy.ids.formats import LOWER_ALNUM

Json: TypeAlias = str | int | float | bool | list["Json"] | dict[str, "Json"] | None

#: Every reason a case may give, with what it means.  A case's ``reason`` is one of these codes.
REASONS: Final[Mapping[str, str]] = {
    # Accepted.
    "canonical": "a canonical ID: <registered prefix>-<adjective>-<noun>-<12 Crockford base32>",
    "canonical-hex-suffix": "12 lower-case hex digits are Crockford base32 too, so the value is canonical "
                            "(Securify's legacy format cannot be told apart from it)",
    "legacy-format": "the product's own earlier format (accepted for IDs already issued, never minted); "
                     "`format` names it",
    "at-length-limit": "exactly 80 characters in the product's legacy format: the longest value accepted",
    # Refused.
    "wrong-prefix": "a registered prefix other than the one asked for (a hyphenated prefix is never "
                    "ambiguous: team-api-key-... is not a team ID)",
    "unregistered-prefix": "a prefix that is not in the registry (asked with no prefix, Agentfy only)",
    "retired-prefix": "organization, organization-member, ...: replaced by org, org-member, ... and never "
                      "valid again",
    "look-alike-word": "a word one edit away from a dictionary word (river, not rivers)",
    "word-in-wrong-slot": "a dictionary word in the wrong place: words swapped, or a verb where the "
                          "adjective or noun goes",
    "word-not-in-dictionary": "a word in no dictionary (for Shiffty's legacy format: not [a-z]+)",
    "extra-word": "a third word before a 12-character suffix",
    "missing-part": "fewer parts than any format has, or an empty part",
    "bad-separator": "parts joined by something other than a single '-'",
    "suffix-length": "a suffix whose length no format of the product has (6 is Shiffty's, 20 needs a "
                     "verb, 12 is canonical)",
    "suffix-outside-crockford": "a suffix character outside 0123456789abcdefghjkmnpqrstvwxyz (i, l, o, u, "
                                "punctuation); only Store Deputy's legacy [a-z0-9] takes i, l, o, u",
    "upper-case": "an upper-case letter anywhere: IDs are lower case and never case-folded",
    "whitespace": "leading, trailing or inner whitespace or line breaks (ASCII or Unicode): never trimmed",
    "invisible-character": "a zero-width or otherwise invisible character (U+200B, U+FEFF, soft hyphen, ...)",
    "percent-encoding": "percent-encoded characters: never decoded",
    "unicode-look-alike": "a non-ASCII letter or hyphen that looks like an ASCII one (Cyrillic, Greek, "
                          "full-width, dashes, combining marks): never normalised",
    "non-ascii-digit": "a digit outside ASCII 0-9 (full-width, Arabic-Indic, superscript, ...)",
    "nul-character": "a NUL character (U+0000) anywhere",
    "control-character": "another control character (escape, backspace, delete, ...)",
    "nil-uuid": "the nil UUID 00000000-0000-0000-0000-000000000000, never an identity in any format",
    "malformed-uuid": "a UUID written another way: no hyphens, braces, urn:uuid:, other group lengths",
    "other-product-format": "another product's legacy format, which this product never issued",
    "too-long": "longer than 80 characters, the most any format accepts (checked before parsing)",
    "empty": "the empty string",
    "not-a-string": "a JSON value that is not a string: number, boolean, null, array or object",
}

ACCEPTED_REASONS: Final = frozenset({"canonical", "canonical-hex-suffix", "legacy-format", "at-length-limit"})
AGENTFY: Final = "agentfy"
ADJECTIVES, NOUNS, VERBS = ID_WORDS
REGISTERED: Final = tuple(sorted(ID_PREFIXES))

#: The specification's example shape, with the noun human-id has (``rivers``; ``river`` is not a word).
SPEC_EXAMPLE: Final = "user-calm-rivers-k8m4p2d7n9x3"


@dataclass(frozen=True)
class Intent:
    """One value asked with one prefix argument (``None``: no prefix) of ``products``.

    ``accepted`` maps each product that must accept the value to the reason; every other product in
    ``products`` must refuse it, for ``refused``.
    """

    value: Json
    prefix: str | None
    refused: str
    accepted: Mapping[str, str] = field(default_factory=dict)
    products: tuple[str, ...] = PRODUCTS


def everywhere(value: str, prefix: str | None, reason: str = "canonical") -> Intent:
    """Accepted by every product (never used with a value whose prefix is unregistered)."""
    return Intent(value, prefix, refused="", accepted=dict.fromkeys(PRODUCTS, reason))


def nowhere(value: Json, prefix: str | None, reason: str, products: tuple[str, ...] = PRODUCTS) -> Intent:
    """Refused by every product in ``products`` for ``reason``."""
    return Intent(value, prefix, refused=reason, products=products)


def only(products: tuple[str, ...], value: str, prefix: str | None, refused: str) -> Intent:
    """Accepted in their legacy format by ``products`` only; refused by the rest as another product's."""
    return Intent(value, prefix, refused=refused, accepted=dict.fromkeys(products, "legacy-format"))


class SeededBytes:
    """A deterministic byte stream: SHA-256 of ``label:counter``, block after block.

    Used as ``format_id``'s random source and to pick words and suffixes, so the values are realistic yet
    identical on every run (test data, not identities).
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self.counter = 0
        self.buffer = b""

    def __call__(self, n: int) -> bytes:
        while len(self.buffer) < n:
            self.buffer += hashlib.sha256(f"{self.label}:{self.counter}".encode()).digest()
            self.counter += 1
        chunk, self.buffer = self.buffer[:n], self.buffer[n:]
        return chunk

    def pick(self, items: tuple[str, ...] | str) -> str:
        return items[int.from_bytes(self(2), "big") % len(items)]

    def text(self, alphabet: str, length: int) -> str:
        return "".join(self.pick(alphabet) for _ in range(length))


def minted(prefix: str, label: str) -> str:
    return format_id(prefix, SeededBytes(f"{label}:{prefix}"))


def spread(items: tuple[str, ...], count: int, start: int) -> tuple[str, ...]:
    """``count`` items evenly spread over ``items`` from ``start``, so a section covers the registry."""
    step = max(1, len(items) // count)
    return tuple(items[(start + i * step) % len(items)] for i in range(count))


# --- canonical IDs and prefixes -----------------------------------------------------------------------


def canonical_ids() -> Iterator[Intent]:
    """A minted ID of every registered prefix, asked with its prefix and with none; and the spec's example."""
    for prefix in REGISTERED:
        value = minted(prefix, "canonical")
        yield everywhere(value, prefix)
        yield everywhere(value, None)
    yield everywhere(SPEC_EXAMPLE, "user")
    source = SeededBytes("hex")
    for prefix in spread(REGISTERED, 6, 1):
        hex_suffix = source.text("abcdef", 2) + source.text(HEX_ALPHABET, 10)
        value = f"{prefix}-{source.pick(ADJECTIVES)}-{source.pick(NOUNS)}-{hex_suffix}"
        yield everywhere(value, prefix, "canonical-hex-suffix")
        yield everywhere(value, None, "canonical-hex-suffix")
    yield everywhere("user-calm-rivers-000000000000", "user")
    yield everywhere("user-calm-rivers-zzzzzzzzzzzz", "user")


def nested_prefix_pairs() -> Iterator[tuple[str, str]]:
    """Registered prefixes where one is the other plus hyphenated words, at either end."""
    for short in REGISTERED:
        for long in REGISTERED:
            if long != short and (long.startswith(short + "-") or long.endswith("-" + short)):
                yield short, long


def wrong_prefixes() -> Iterator[Intent]:
    """A canonical ID asked as another registered prefix, including prefixes nested in each other."""
    for index, prefix in enumerate(REGISTERED):
        other = REGISTERED[(index + 1) % len(REGISTERED)]
        yield nowhere(minted(prefix, "canonical"), other, "wrong-prefix")
    for short, long in nested_prefix_pairs():
        yield nowhere(minted(long, "canonical"), short, "wrong-prefix")
        yield nowhere(minted(short, "canonical"), long, "wrong-prefix")


def unregistered_prefixes() -> Iterator[Intent]:
    """Prefixes near registered ones: refused by Agentfy with no prefix, and by everyone as a wrong prefix."""
    tail = "-calm-rivers-k8m4p2d7n9x3"
    near = {
        "users": "user", "agents": "agent", "teams": "team", "orgs": "org", "apikey": "api-key",
        "team-api": "team-api-key", "api": "api-key", "kg": "kg-entity", "memory": "memory-document",
        "agent-mcp": "agent-mcp-server", "team-tasks": "team-task", "skill-set": "skill", "river": "user",
        "widget": "user", "u": "user", "x-user": "user", "user2": "user",
    }
    for head, asked in near.items():
        yield nowhere(head + tail, None, "unregistered-prefix", (AGENTFY,))
        yield nowhere(head + tail, asked, "unregistered-prefix")
    for retired, current in RENAMED_PREFIXES.items():
        value = f"{retired}-silver-days-zxy8s9bpp6hp"
        yield nowhere(value, None, "retired-prefix", (AGENTFY,))
        yield nowhere(value, current, "retired-prefix")
        yield nowhere(f"{retired}-calm-rivers-jump-{'k' * 20}", None, "retired-prefix", (AGENTFY,))


# --- words ------------------------------------------------------------------------------------------


def look_alike(word: str) -> str:
    """A word one edit from ``word`` that is in no dictionary: singular, plural, or a doubled letter."""
    everything = set(ADJECTIVES) | set(NOUNS) | set(VERBS)
    for candidate in (word[:-1] if word.endswith("s") else word + "s", word + "s", word + word[-1],
                      word[:-1]):
        if candidate not in everything and len(candidate) > 1:
            return candidate
    raise AssertionError(f"no look-alike for {word!r}")


def words() -> Iterator[Intent]:
    """Words that are almost right: refused everywhere (by Shiffty, which takes any word, for the suffix)."""
    yield nowhere("user-calm-river-k8m4p2d7n9x3", "user", "look-alike-word")
    yield nowhere("user-calm-river-k8m4p2d7n9x3", None, "look-alike-word")
    source = SeededBytes("words")
    for prefix in spread(REGISTERED, 8, 2):
        adjective, noun, verb = source.pick(ADJECTIVES), source.pick(NOUNS), source.pick(VERBS)
        suffix = source.text(ID_SUFFIX_ALPHABET, 12)
        for value, reason in (
            (f"{prefix}-{adjective}-{look_alike(noun)}-{suffix}", "look-alike-word"),
            (f"{prefix}-{look_alike(adjective)}-{noun}-{suffix}", "look-alike-word"),
            (f"{prefix}-{noun}-{adjective}-{suffix}", "word-in-wrong-slot"),
            (f"{prefix}-{verb}-{noun}-{suffix}", "word-in-wrong-slot"),
            (f"{prefix}-{adjective}-{verb}-{suffix}", "word-in-wrong-slot"),
            (f"{prefix}-{adjective}-{noun}-{verb}-{suffix}", "extra-word"),
            (f"{prefix}-{adjective}-{suffix}", "missing-part"),
            (f"{prefix}-{noun}-{suffix}", "missing-part"),
            (f"{prefix}-{adjective}-{noun}-{source.text(ID_SUFFIX_ALPHABET, 20)}", "suffix-length"),
        ):
            yield nowhere(value, prefix, reason)
    for word in ("widget", "zzz", "a", "calmrivers", "calm1"):
        yield nowhere(f"user-{word}-rivers-k8m4p2d7n9x3", "user", "word-not-in-dictionary")
        yield nowhere(f"user-calm-{word}-k8m4p2d7n9x3", "user", "word-not-in-dictionary")


# --- suffixes ---------------------------------------------------------------------------------------


def suffixes() -> Iterator[Intent]:
    """Suffix lengths and characters: Crockford's exclusions i, l, o, u are Store Deputy's legacy only."""
    head = "user-calm-rivers-"
    base = "k8m4p2d7n9x3"
    for letter in "ilou":
        for position in (0, 5, 11):
            value = head + base[:position] + letter + base[position + 1:]
            yield Intent(value, "user", refused="suffix-outside-crockford",
                         accepted={"store-deputy": "legacy-format"})
    for char in "_.+/=:~!*'":
        yield nowhere(head + base[:6] + char + base[7:], "user", "suffix-outside-crockford")
    for length in (1, 5, 7, 11, 13, 19, 20, 21, 24, 32):
        yield nowhere(head + (base * 3)[:length], "user", "suffix-length")
    yield only(("shiffty",), head + base[:6], "user", "suffix-length")
    yield nowhere(head + "a1b2c3d4e5f6a7", "user", "suffix-length")
    yield nowhere(head + "a1b2c3d4e5", "user", "suffix-length")


# --- every product's legacy formats -----------------------------------------------------------------

_SHIFFTY_WORDS: Final = ("blue", "fox", "river", "a", "quartz", "zebra", "k", "moonlight", "calm", "rivers")


def legacy_formats() -> Iterator[Intent]:
    """Each product's earlier formats: accepted by that product (and by any whose formats say so), refused
    by the others as another product's format.  Each is asked with its prefix and with no prefix."""
    source = SeededBytes("legacy")
    three_words = spread(REGISTERED, 8, 3)
    for prefix in three_words:
        value = (f"{prefix}-{source.pick(ADJECTIVES)}-{source.pick(NOUNS)}-{source.pick(VERBS)}-"
                 f"{source.text(ID_SUFFIX_ALPHABET, 20)}")
        for asked in (prefix, None):  # Agentfy's and Bonsite's formats are the same shape
            yield only((AGENTFY, "bonsite"), value, asked, "other-product-format")
    for index, prefix in enumerate(spread(REGISTERED, 8, 5)):
        count = len(_SHIFFTY_WORDS)
        first, second = _SHIFFTY_WORDS[index % count], _SHIFFTY_WORDS[(index * 3 + 1) % count]
        value = f"{prefix}-{first}-{second}-{source.text(ID_SUFFIX_ALPHABET, 6)}"
        for asked in (prefix, None):
            yield only(("shiffty",), value, asked, "other-product-format")
    for index, prefix in enumerate(spread(REGISTERED, 8, 7)):
        suffix = list(source.text(LOWER_ALNUM, 12))
        suffix[index % 12] = "ilou"[index % 4]  # at least one letter Crockford leaves out
        value = f"{prefix}-{source.pick(ADJECTIVES)}-{source.pick(NOUNS)}-{''.join(suffix)}"
        for asked in (prefix, None):
            yield only(("store-deputy",), value, asked, "other-product-format")
    for asked in (*spread(REGISTERED, 6, 11), None):
        for label in ("v4", "v7", "v1"):
            yield only((AGENTFY,), legacy_uuid(label), asked, "other-product-format")
    yield only((AGENTFY,), "ffffffff-ffff-ffff-ffff-ffffffffffff", "user", "other-product-format")
    yield from legacy_near_misses()


def legacy_uuid(label: str) -> str:
    """A lower-case UUID of the given version from the seeded stream."""
    data = bytearray(SeededBytes(f"uuid:{label}")(16))
    version = int(label[1:])
    data[6] = (data[6] & 0x0F) | (version << 4)
    data[8] = (data[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(data)))


def legacy_near_misses() -> Iterator[Intent]:
    """Legacy shapes with one thing wrong: refused by every product, the legacy one included."""
    good = "agent-calm-rivers-jump-0123456789abcdefghjk"
    yield nowhere(good, "team", "wrong-prefix")
    yield nowhere("agent-calm-rivers-rivers-0123456789abcdefghjk", "agent", "word-in-wrong-slot")
    yield nowhere("agent-calm-rivers-jumps-0123456789abcdefghjk", "agent", "look-alike-word")
    yield nowhere("agent-calm-rivers-jump-0123456789abcdefghjki", "agent", "suffix-length")
    yield nowhere("agent-calm-rivers-jump-0123456789abcdefghj", "agent", "suffix-length")
    yield nowhere("agent-calm-rivers-jump-0123456789abcdefghji", "agent", "suffix-outside-crockford")
    yield nowhere("agent-calm-rivers-jump-k8m4p2", "agent", "extra-word")
    yield nowhere("user-calm-river-k8m4p", "user", "suffix-length")
    yield nowhere("user-calm-river-k8m4pu", "user", "suffix-outside-crockford")
    yield nowhere("user-calm-r2d2-k8m4p2", "user", "word-not-in-dictionary")
    yield nowhere("user-calm--k8m4p2", "user", "missing-part")
    yield nowhere("user-calm-rivers-k8m4p2d7n9x3-", "user", "missing-part")
    yield nowhere("user-calm-rivers-k8m4p2d7n9x!", "user", "suffix-outside-crockford")
    uuid_v4 = legacy_uuid("v4")
    for value in (uuid_v4.replace("-", ""), "{" + uuid_v4 + "}", "urn:uuid:" + uuid_v4,
                  uuid_v4[:23] + uuid_v4[24:], uuid_v4[:-1], uuid_v4 + "0", uuid_v4[:-1] + "g",
                  "-".join((uuid_v4[:8], uuid_v4[9:13], uuid_v4[14:18], uuid_v4[19:23] + uuid_v4[24:28],
                            uuid_v4[28:]))):
        yield nowhere(value, "user", "malformed-uuid")
        yield nowhere(value, None, "malformed-uuid")
    for asked in ("user", "org", None):
        yield nowhere(NIL_UUID, asked, "nil-uuid")


def length_limit() -> Iterator[Intent]:
    """Shiffty's any-word format is the one that can pass 80 characters: 80 is accepted, 81 is not."""
    prefix = "agent-config-permission"
    room = ID_MAX_LENGTH - len(prefix) - len("--") - len("-abcdef")
    at_limit = f"{prefix}-{'a' * (room // 2)}-{'b' * (room - room // 2)}-k8m4p2"
    assert len(at_limit) == ID_MAX_LENGTH
    yield Intent(at_limit, prefix, refused="other-product-format", accepted={"shiffty": "at-length-limit"})
    over = at_limit.replace("-aaa", "-aaaa", 1)
    yield nowhere(over, prefix, "too-long")
    for value in ("a" * 81, "user-calm-rivers-" + "k" * 64, (SPEC_EXAMPLE + "-") * 3 + SPEC_EXAMPLE,
                  "agent-" * 40 + "calm-rivers-k8m4p2d7n9x3", "0" * 4096):
        yield nowhere(value, "user", "too-long")


# --- transport damage: case, whitespace, encodings, look-alikes ------------------------------------------


def _at(value: str, index: int, replacement: str) -> str:
    return value[:index] + replacement + value[index + 1:]


def _insert(value: str, index: int, text: str) -> str:
    return value[:index] + text + value[index:]


def damaged(value: str) -> Iterator[tuple[str, str]]:
    """``(damaged value, reason)``: what case folding, trimming, URLs and copy-paste do to an ID."""
    hyphen = value.find("-")
    last = len(value) - 1
    letter = next(i for i in range(last, -1, -1) if value[i].isalpha())
    digit = next((i for i in range(last, -1, -1) if value[i].isdigit()), None)
    yield value.upper(), "upper-case"
    yield value[0].upper() + value[1:], "upper-case"
    yield _at(value, letter, value[letter].upper()), "upper-case"
    if hyphen > 0:
        yield _at(value, hyphen + 1, value[hyphen + 1].upper()), "upper-case"
    for text in (" ", "\n", "\t", "\r\n", "\u00a0", "\u3000", "\u2028"):
        yield value + text, "whitespace"
    for text in (" ", "\n", "\t"):
        yield text + value, "whitespace"
    yield " " + value + " ", "whitespace"
    if hyphen > 0:
        yield _at(value, hyphen, " "), "whitespace"
        yield _insert(value, hyphen + 1, " "), "whitespace"
    for text in ("\u200b", "\u200d", "\u2060", "\u00ad"):
        yield _insert(value, max(hyphen, 1), text), "invisible-character"
    yield "\ufeff" + value, "invisible-character"
    if hyphen > 0:
        yield _at(value, hyphen, "%2D"), "percent-encoding"
        yield _at(value, hyphen, "%2d"), "percent-encoding"
    yield "%" + value[0].encode().hex().upper() + value[1:], "percent-encoding"
    yield value + "%0A", "percent-encoding"
    yield "%20" + value, "percent-encoding"
    for dash in ("\u2010", "\u2011", "\u2013", "\u2212", "\ufe63", "\uff0d"):
        if hyphen > 0:
            yield _at(value, hyphen, dash), "unicode-look-alike"
    look_alikes = {"a": "\u0430", "e": "\u0435", "c": "\u0441", "p": "\u0440", "x": "\u0445",
                   "s": "\u017f", "k": "\u03ba", "m": "\uff4d"}
    for plain, fake in look_alikes.items():
        index = value.rfind(plain)
        if index >= 0:
            yield _at(value, index, fake), "unicode-look-alike"
    yield _insert(value, letter + 1, "\u0301"), "unicode-look-alike"
    if digit is not None:
        for zero in ("\uff10", "\u0660", "\u06f0", "\u0966", "\U0001d7ce"):
            yield _at(value, digit, chr(ord(zero) + int(value[digit]))), "non-ascii-digit"
        superscripts = {"1": "\u00b9", "2": "\u00b2", "3": "\u00b3"}
        if value[digit] in superscripts:
            yield _at(value, digit, superscripts[value[digit]]), "non-ascii-digit"
    yield value + "\x00", "nul-character"
    yield "\x00" + value, "nul-character"
    yield _at(value, len(value) // 2, "\x00"), "nul-character"
    if hyphen > 0:
        yield _at(value, hyphen, "\x00"), "nul-character"
    for control in ("\x1b", "\x08", "\x7f", "\x85", "\x01"):
        yield value + control, "control-character"
    if hyphen > 0:
        for separator in ("_", ".", "--", ":", "/"):
            yield value[:hyphen] + separator + value[hyphen + 1:], "bad-separator"
        yield "-" + value, "bad-separator"
        yield value.replace("-", "_"), "bad-separator"


def transport_damage() -> Iterator[Intent]:
    """Damage applied to values that products accept: every product refuses the result.

    The canonical values get every kind of damage; the legacy ones (whose shapes differ only after the
    words) get the first damage of each reason.
    """
    canonical = ((SPEC_EXAMPLE, "user"), (minted("team-api-key", "damage"), "team-api-key"),
                 (minted("org", "damage"), "org"))
    legacy = (("agent-calm-rivers-jump-0123456789abcdefghjk", "agent"), (legacy_uuid("v7"), "agent"),
              ("user-blue-fox-k8m4p2", "user"), ("user-calm-rivers-k8m4p2d7n9xi", "user"))
    for (value, prefix), every_kind in [*((base, True) for base in canonical), *((base, False) for base in legacy)]:
        seen: set[str] = set()
        for bad, reason in damaged(value):
            if bad == value or (not every_kind and reason in seen):
                continue  # upper-casing a digit changes nothing
            seen.add(reason)
            yield nowhere(bad, prefix, "too-long" if len(bad) > ID_MAX_LENGTH else reason)
    for value, _prefix in canonical:
        yield nowhere(value.upper(), None, "upper-case")
        yield nowhere(value + "\n", None, "whitespace")
        yield nowhere(value + "\x00", None, "nul-character")


# --- not an ID at all ---------------------------------------------------------------------------------

NOT_STRINGS: Final[tuple[Json, ...]] = (
    0, 1, -1, 1.5, 123456789012, True, False, None, [], [SPEC_EXAMPLE], {}, {"id": SPEC_EXAMPLE},
)


def not_ids() -> Iterator[Intent]:
    for asked in ("user", None):
        yield nowhere("", asked, "empty")
        for value in NOT_STRINGS:
            yield nowhere(value, asked, "not-a-string")
        for text in ("user", "user-", "-", "---", "user-calm", "user-calm-rivers", "user-calm-rivers-",
                     "calm-rivers-k8m4p2d7n9x3", "user-calm-rivers--k8m4p2d7n9x3", "user-calm-rivers-k8m4p2d7n9x3-"):
            yield nowhere(text, asked, "missing-part")
        for text in (" ", "\n", "\x00", "%20"):
            yield nowhere(text, asked, {" ": "whitespace", "\n": "whitespace", "\x00": "nul-character",
                                        "%20": "percent-encoding"}[text])


def catalogue() -> Iterator[Intent]:
    """Every intent, section by section."""
    for section in (canonical_ids, wrong_prefixes, unregistered_prefixes, words, suffixes, legacy_formats,
                    length_limit, transport_damage, not_ids):
        yield from section()
