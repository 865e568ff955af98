"""The snippet ``postrun mcp`` gives of a hit: the step's text around the first word, redacted."""

from __future__ import annotations

from postrun.recall.present import snippet
from postrun.review.redact import Redactor
from tests.support.secret_samples import SAMPLES


def test_a_secret_the_index_s_field_cut_splits_is_masked_whole() -> None:
    """The index holds each field's first 4,096 characters; the snippet is redacted from the
    whole fields, so no piece of a secret that cut leaves shows."""
    token = SAMPLES["github_token"][0]
    stdout = "x" * 4070 + f" GITHUB_TOKEN {token} done"
    record = {"payload": {"command": "env", "stdout": stdout}, "flags": []}
    shown = snippet(record, ["GITHUB_TOKEN"], Redactor())
    assert "GITHUB_TOKEN [REDACTED:" in shown and token[:6] not in shown
