"""Login tokens, sign-ins, CSRF and Origin rules of the review app (pure, no server)."""

from __future__ import annotations

import pytest

from postrun.errors import UsageError
from postrun.store.outline import SessionParts, StepOutline
from postrun.web.auth import LOGIN_TOKEN_SECONDS, Gate, allowed_hosts, login_token, origin_allowed
from postrun.web.present import session_view
from postrun.web.server import check_loopback
from tests.support.web import HELPER_ACTOR, helper_session

NOW = 1_796_000_000.0


def test_a_login_token_signs_in_once() -> None:
    gate = Gate("s3cret")
    token = login_token("s3cret", NOW)
    session = gate.redeem(token, NOW + 1)
    assert session and gate.signed_in(session)
    assert gate.redeem(token, NOW + 2) is None
    assert not gate.signed_in("guess") and not gate.signed_in(None)


@pytest.mark.parametrize(
    ("token", "at"),
    [
        (login_token("s3cret", NOW), NOW + LOGIN_TOKEN_SECONDS + 1),  # expired
        (login_token("s3cret", NOW), NOW - 60),  # from the future
        (login_token("other", NOW), NOW),  # another server's secret
        ("", NOW),
        ("123.abc", NOW),
        (login_token("s3cret", NOW).replace(".", ".x", 1), NOW),  # nonce changed after signing
    ],
)
def test_bad_login_tokens_are_refused(token: str, at: float) -> None:
    assert Gate("s3cret").redeem(token, at) is None


def test_csrf_is_bound_to_the_session() -> None:
    gate = Gate("s3cret")
    one = gate.redeem(login_token("s3cret", NOW), NOW)
    two = gate.redeem(login_token("s3cret", NOW), NOW)
    assert one and two
    assert gate.csrf_ok(one, gate.csrf(one))
    assert not gate.csrf_ok(two, gate.csrf(one))
    assert not gate.csrf_ok(one, None) and not gate.csrf_ok(None, gate.csrf(one))


def test_hosts_and_origins() -> None:
    hosts = allowed_hosts(8765)
    assert hosts == {"127.0.0.1:8765", "localhost:8765", "[::1]:8765"}
    assert origin_allowed("http://localhost:8765", hosts)
    assert not origin_allowed("http://localhost:8766", hosts)
    assert not origin_allowed("null", hosts) and not origin_allowed(None, hosts)
    assert origin_allowed("null", hosts, "same-origin")  # a form under Referrer-Policy: no-referrer
    assert not origin_allowed("null", hosts, "cross-site") and not origin_allowed(None, hosts, "same-origin")


@pytest.mark.parametrize("host", ["0.0.0.0", "10.0.0.1", "::", "localhost.example"])
def test_only_loopback_binds(host: str) -> None:
    with pytest.raises(UsageError):
        check_loopback(host)
    assert check_loopback("127.0.0.1") == "127.0.0.1" and check_loopback("[::1]") == "::1"


def test_helper_steps_nest_under_the_step_that_started_them() -> None:
    mapped = helper_session()
    parts = SessionParts(mapped.session, mapped.segments, mapped.actors, mapped.turns)
    steps = [row.record for row in mapped.steps]
    outlines = [StepOutline(s["seq"], s["id"], s["turn_id"], s["type"], s["outcome"], bool(s["flags"])) for s in steps]
    view = session_view(parts, outlines, steps)
    (turn,) = view.turns
    assert [v.seq for v in turn.steps] == [0, 1, 5]
    (helper,) = turn.steps[1].helpers
    assert (helper.actor_id, helper.label, helper.kind) == (HELPER_ACTOR, "config-reviewer", "subagent")
    assert [v.seq for v in helper.steps] == [2, 3, 4]
    assert view.unattached == []
