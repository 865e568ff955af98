"""The exclude patterns: globs on the workspace root, covering the folders below, ~ is home."""

from __future__ import annotations

import sys

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


def test_paths_are_normalised_as_the_file_system_reads_them() -> None:
    """Repeated and trailing slashes collapse on either side."""
    assert RULES.matching("/home/dev//clients/acme") == "~/clients/acme"
    assert RULES.matching("//home/dev/clients///acme//api/") == "~/clients/acme"
    assert Exclusions.of(["/srv//private/"], "/h").matching("/srv/private/") == "/srv//private/"
    assert Exclusions.of(["~//clients/"], "/home/dev").matching("/home/dev/clients/x") == "~//clients/"


def test_letter_case_folds_only_where_the_file_system_ignores_it() -> None:
    case_sensitive = Exclusions.of(["~/Clients/ACME"], "/home/dev", fold_case=False)
    assert case_sensitive.matching("/home/dev/clients/acme") is None  # another folder on Linux
    assert case_sensitive.matching("/home/dev/Clients/ACME/api") == "~/Clients/ACME"
    folding = Exclusions.of(["~/Clients/ACME"], "/Users/Dev", fold_case=True)
    assert folding.matching("/users/dev/clients/acme/api") == "~/Clients/ACME"
    assert folding.matching("/Users/Dev/clients/acme2") is None
    assert Exclusions.of(["/x"], "/h").fold_case is (sys.platform == "darwin")  # macOS's default: folds
