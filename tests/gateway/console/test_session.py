"""The console's sealed session cookie: opened only by the gateway that sealed it, unchanged, within its age;
the key is not readable in it; CSRF tokens compare exactly."""

from __future__ import annotations

from agentfy.gateway.console.session import SESSION_MAX_AGE_SECONDS, SessionSeal, csrf_matches, new_session


def test_only_the_sealing_gateway_opens_a_cookie_within_its_age() -> None:
    now = [1_000_000.0]
    seal = SessionSeal(b"a" * 32, clock=lambda: now[0])
    session = new_session("agfy_secret-key", clock=lambda: now[0])
    sealed = seal.seal(session)
    assert "agfy_secret-key" not in sealed and seal.seal(session) != sealed  # a fresh nonce every time
    assert seal.open(sealed) == session
    assert SessionSeal(b"b" * 32, clock=lambda: now[0]).open(sealed) is None  # another gateway's secret
    # an edited character: one in the middle, where every bit counts (the last one of unpadded base64 may carry
    # bits the decoding ignores, so changing it can leave the same bytes — no forgery, and no test of one)
    middle = len(sealed) // 2
    assert seal.open(sealed[:middle] + ("A" if sealed[middle] != "A" else "B") + sealed[middle + 1:]) is None
    assert seal.open("x" * 5000) is None and seal.open("") is None and seal.open(None) is None
    now[0] += SESSION_MAX_AGE_SECONDS
    assert seal.open(sealed) is None  # expired


def test_csrf_tokens_must_match_exactly() -> None:
    session = new_session(None)
    assert csrf_matches(session, session.csrf)
    for sent in ("", session.csrf[:-1], session.csrf + "x", None, 42, "\udcff"):
        assert not csrf_matches(session, sent)
    assert not csrf_matches(None, session.csrf)
    assert new_session(None).csrf != session.csrf
