"""The exclude patterns: globs on the workspace root, covering the folders below, ~ is home."""

from __future__ import annotations

from postrun.review.exclude import Exclusions

RULES = Exclusions.of(["~/clients/acme", "/srv/private/*", "/work/*-secret"], "/home/dev/")


def test_a_pattern_covers_the_folder_and_everything_below() -> None:
    assert RULES.matching("/home/dev/clients/acme") == "~/clients/acme"
    assert RULES.matching("/home/dev/clients/acme/api/") == "~/clients/acme"
    assert RULES.matching("/srv/private/x/y") == "/srv/private/*"
    assert RULES.matching("/work/app-secret") == "/work/*-secret"


def test_near_misses_are_recorded() -> None:
    assert RULES.matching("/home/dev/clients/acme2") is None  # a longer name is another folder
    assert RULES.matching("/home/dev/clients") is None  # the parent is not excluded
    assert RULES.matching("/srv/private") is None
    assert RULES.matching("/work/app-secret-not") is None
    assert RULES.matching("") is None  # no known workspace: nothing to match
    assert Exclusions.of([], "/home/dev").matching("/home/dev/x") is None
