"""The snippet ``postrun mcp`` gives of a hit: the step's text around the first word, redacted;
and which hits it leaves out: those found only inside a secret."""

from __future__ import annotations

from postrun.recall.present import found_in_secret, shown_text, snippet
from postrun.review.redact import Redactor
from postrun.store.search import holds_phrase, index_terms
from tests.support.secret_samples import SAMPLES


def test_a_secret_the_index_s_field_cut_splits_is_masked_whole() -> None:
    """The index holds each field's first 4,096 characters; the snippet is redacted from the
    whole fields, so no piece of a secret that cut leaves shows."""
    token = SAMPLES["github_token"][0]
    stdout = "x" * 4070 + f" GITHUB_TOKEN {token} done"
    record = {"payload": {"command": "env", "stdout": stdout}, "flags": []}
    shown = snippet(record, shown_text(record, Redactor()), ["GITHUB_TOKEN"], Redactor())
    assert "GITHUB_TOKEN [REDACTED:" in shown and token[:6] not in shown


def test_terms_and_phrases_as_the_index_makes_them() -> None:
    terms = index_terms("Héllo WORLD: foo-bar_baz ÉTÉ 2fa")
    assert terms == "\x00hello\x00world\x00foo\x00bar\x00baz\x00ete\x002fa\x00"
    assert holds_phrase(terms, "HELLO") and holds_phrase(terms, "foo-bar") and holds_phrase(terms, "bar.baz")
    assert holds_phrase(terms, "été") and holds_phrase(terms, "--")  # a word of no terms is held anywhere
    assert not holds_phrase(terms, "foo-baz") and not holds_phrase(terms, "hell") and not holds_phrase(terms, "2")


def test_a_word_found_only_inside_a_secret() -> None:
    password = "Xk9vQ2mP7rTzqW"
    record = {"payload": {"command": "cat ~/.pgpass", "stdout": f"db:5432:app:bob:{password}\n"}, "flags": []}
    shown = shown_text(record, Redactor())
    assert password not in shown
    assert found_in_secret(record, shown, [password.lower()])
    assert found_in_secret(record, shown, ["cat", f"bob:{password}"])  # one such word is enough
    assert not found_in_secret(record, shown, ["pgpass", "bob"])
    assert not found_in_secret(record, shown, ["absent"])  # not found in it at all: not this rule's
