"""Workspace paths: a safe, injective segment encoding, and paths that never leave the agent's directory."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.agents.workspace import (
    SEGMENT_MAX_BYTES,
    InvalidSegmentError,
    WorkspaceEscapeError,
    agent_dir,
    decode_segment,
    encode_segment,
    workspace_path,
)
from agentfy.identity import InvalidAgentKeyError
from agentfy.identity.keys import InvalidTenantSlugError, parse_tenant_slug
from agentfy.ids import format_id
from agentfy.store.repos.orgs import parse_slug

SAFE = set("abcdefghijklmnopqrstuvwxyz0123456789_-%")

# Any code point, lone surrogates included; and a strategy biased towards the dangerous ones.
any_char = st.characters(exclude_categories=[])
tricky_char = st.sampled_from([".", "/", "\\", "%", ":", "\x00", "\n", "\x7f", "A", "a", "C", "c", " ", "~",
                               "2", "f", "F", "e", "é", "\u0301", "\udc80", "\U0001f916"])
segments = st.text(alphabet=st.one_of(any_char, tricky_char), min_size=1, max_size=20)


# -- The encoding ------------------------------------------------------------------------------------------
@given(segments)
def test_decode_inverts_encode(value: str) -> None:
    assert decode_segment(encode_segment(value)) == value


@given(segments, segments)
def test_distinct_inputs_never_share_a_directory_even_case_insensitively(a: str, b: str) -> None:
    if a != b:
        assert encode_segment(a).casefold() != encode_segment(b).casefold()


@given(segments)
def test_output_is_one_safe_lower_case_relative_name(value: str) -> None:
    name = encode_segment(value)
    assert set(name) <= SAFE and name == name.lower()
    assert name not in ("", ".", "..")
    assert "/" not in name and "\\" not in name and ":" not in name
    assert len(name.encode()) <= SEGMENT_MAX_BYTES
    for flavour in (PurePosixPath, PureWindowsPath):
        path = flavour(name)
        assert path.parts == (name,) and not path.is_absolute() and not path.drive and not path.anchor


@pytest.mark.parametrize(("value", "expected"), [
    ("..", "%2e%2e"),
    (".", "%2e"),
    ("../../etc/passwd", "%2e%2e%2f%2e%2e%2fetc%2fpasswd"),
    ("/etc/passwd", "%2fetc%2fpasswd"),
    ("C:\\x", "%43%3a%5cx"),
    ("a\x00b", "a%00b"),
    ("Bot", "%42ot"),
    ("bot", "bot"),
    ("a/b", "a%2fb"),
    ("a%2Fb", "a%252%46b"),
    ("a%2fb", "a%252fb"),
    ("notes.md", "notes%2emd"),
    ("café", "caf%c3%a9"),
    ("con", "%63on"),
    ("NUL", "%4e%55%4c"),
    ("support-bot_2", "support-bot_2"),
])
def test_explicit_encodings(value: str, expected: str) -> None:
    assert encode_segment(value) == expected
    assert decode_segment(expected) == value


def test_look_alike_inputs_stay_apart() -> None:
    names = [encode_segment(v) for v in ("a/b", "a%2Fb", "a%2fb", "a\\b", "A/B", "a%b")]
    assert len({n.casefold() for n in names}) == len(names)
    assert encode_segment("Bot").casefold() != encode_segment("bot").casefold()


@pytest.mark.parametrize("bad", ["", None, b"bytes", 7])
def test_empty_and_non_string_segments_are_refused(bad: object) -> None:
    with pytest.raises(InvalidSegmentError):
        encode_segment(bad)  # type: ignore[arg-type]


def test_length_is_capped_with_an_error_never_truncated() -> None:
    assert encode_segment("a" * SEGMENT_MAX_BYTES) == "a" * SEGMENT_MAX_BYTES
    with pytest.raises(InvalidSegmentError, match="never truncated"):
        encode_segment("a" * (SEGMENT_MAX_BYTES + 1))
    with pytest.raises(InvalidSegmentError):
        encode_segment("." * 86)  # 86 * 3 = 258 bytes once escaped


@pytest.mark.parametrize("name", ["", "A", ".", "..", "a/b", "%2F", "%zz", "%2", "%", "%63%6fn", "con", "%61",
                                  "%ff", "\u00e9"])
def test_decode_refuses_names_the_encoder_never_produces(name: str) -> None:
    with pytest.raises(InvalidSegmentError):
        decode_segment(name)


# -- Tenant slugs ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["", "Acme", "acme corp", "-acme", "acme--corp", "a" * 64, None,
                                 pytest.param(format_id("org"), id="minted-org-id"),
                                 "0193a5b0-7000-7000-8000-000000000001"])
def test_tenant_slug_rules(bad: object) -> None:
    with pytest.raises(InvalidTenantSlugError):
        parse_tenant_slug(bad)


@given(st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,3}", fullmatch=True))
def test_a_tenant_slug_is_always_an_organization_slug(value: str) -> None:
    try:
        slug = parse_tenant_slug(value)
    except InvalidTenantSlugError:
        return
    assert parse_slug(slug) == slug


# -- Paths -------------------------------------------------------------------------------------------------
def test_layout(tmp_path: Path) -> None:
    path = workspace_path(tmp_path, "acme", "support-bot", "notes", "Today.md")
    assert path == tmp_path / "tenants" / "acme" / "agents" / "support-bot" / "notes" / "%54oday%2emd"
    assert agent_dir(tmp_path, "acme", "support-bot") == tmp_path / "tenants" / "acme" / "agents" / "support-bot"
    assert not (tmp_path / "tenants").exists()  # nothing is created


def test_the_same_key_in_two_tenants_gets_two_directories(tmp_path: Path) -> None:
    assert agent_dir(tmp_path, "master", "tieu-ho") != agent_dir(tmp_path, "viet-org", "tieu-ho")


def test_ids_are_refused_where_display_identities_belong(tmp_path: Path) -> None:
    with pytest.raises(InvalidAgentKeyError):
        workspace_path(tmp_path, "acme", format_id("agent"))
    with pytest.raises(InvalidTenantSlugError):
        workspace_path(tmp_path, format_id("org"), "support-bot")


@pytest.mark.parametrize("part", ["..", "../../etc/passwd", "/etc/passwd", "C:\\x", "a\x00b", ".", "~", "\\\\srv\\s"])
def test_traversal_attempts_stay_one_segment_inside(tmp_path: Path, part: str) -> None:
    base = agent_dir(tmp_path, "acme", "support-bot")
    path = workspace_path(tmp_path, "acme", "support-bot", part)
    assert path.parent == base and path.name == encode_segment(part)
    assert path.resolve().is_relative_to(base.resolve())


def test_empty_part_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidSegmentError):
        workspace_path(tmp_path, "acme", "support-bot", "notes", "")


@given(st.lists(segments, max_size=6))
def test_arbitrary_parts_never_escape_the_agent_directory(parts: list[str]) -> None:
    root = Path("/srv/agentfy-workspaces")
    base = agent_dir(root, "acme", "support-bot")
    path = workspace_path(root, "acme", "support-bot", *parts)
    assert path.parts == (*base.parts, *(encode_segment(p) for p in parts))
    assert os.path.normpath(path) == str(path)
    assert path.resolve().is_relative_to(base.resolve())


def test_a_symlink_leading_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    base = agent_dir(tmp_path / "root", "acme", "support-bot")
    base.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (base / "link").symlink_to(outside, target_is_directory=True)
    (base / "inner").symlink_to(base / "notes%2emd")
    with pytest.raises(WorkspaceEscapeError):
        workspace_path(tmp_path / "root", "acme", "support-bot", "link", "secret")
    assert workspace_path(tmp_path / "root", "acme", "support-bot", "inner") == base / "inner"


def test_a_symlinked_root_is_fine(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    path = workspace_path(tmp_path / "alias", "acme", "support-bot", "x")
    assert path == tmp_path / "alias" / "tenants" / "acme" / "agents" / "support-bot" / "x"
