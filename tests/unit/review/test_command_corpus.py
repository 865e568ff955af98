"""The command rules over a corpus of destructive, risky and ordinary command lines: the targets."""

from __future__ import annotations

import pytest

from postrun.review.flags import step_flags
from tests.support.command_corpus import BENIGN, DESTRUCTIVE, RISKY

FLAGGED_SHARE = 0.90  # of the destructive lines flagged danger, and of the risky ones flagged at all
BENIGN_FLAGGED = 1  # at most


def severities(line: str) -> set[str]:
    step = {"id": "t#0", "type": "command", "decision": "auto", "outcome": "ok", "payload": {"command": line}}
    return {flag["severity"] for flag in step_flags(step, "/home/dev/project") if flag["kind"] == "dangerous_command"}


@pytest.mark.parametrize("line", DESTRUCTIVE)
def test_a_destructive_line_is_danger(line: str) -> None:
    assert "danger" in severities(line)


@pytest.mark.parametrize("line", RISKY)
def test_a_risky_line_is_flagged(line: str) -> None:
    assert severities(line)


@pytest.mark.parametrize("line", BENIGN)
def test_an_ordinary_line_is_not_flagged(line: str) -> None:
    assert severities(line) == set()


def test_the_corpus_meets_the_targets() -> None:
    assert len(DESTRUCTIVE) >= 60 and len(RISKY) >= 20 and len(BENIGN) >= 60
    danger = sum("danger" in severities(line) for line in DESTRUCTIVE)
    risky = sum(bool(severities(line)) for line in RISKY)
    flagged = [line for line in BENIGN if severities(line)]
    assert danger / len(DESTRUCTIVE) >= FLAGGED_SHARE, f"{danger} of {len(DESTRUCTIVE)}"
    assert risky / len(RISKY) >= FLAGGED_SHARE, f"{risky} of {len(RISKY)}"
    assert len(flagged) <= BENIGN_FLAGGED, flagged
