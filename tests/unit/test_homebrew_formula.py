"""The Homebrew formula installs everything Postrun imports: one resource per dependency."""

from __future__ import annotations

import re
from importlib.metadata import distribution

from packaging.requirements import Requirement

from tests.conftest import REPO

FORMULA = REPO / "packaging" / "homebrew" / "postrun.rb"
# Homebrew builds from sdists; psycopg's binary package has none, its C build stands in.
SDIST_FOR = {"psycopg-binary": "psycopg-c"}


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _runtime_closure(name: str, extras: frozenset[str], seen: set[str]) -> set[str]:
    """Every distribution ``name[extras]`` needs at run time, by the installed metadata."""
    for line in distribution(name).requires or []:
        requirement = Requirement(line)
        wanted = requirement.marker is None or any(
            requirement.marker.evaluate({"extra": extra}) for extra in (extras or {""})
        )
        key = _key(requirement.name)
        if wanted and (key not in seen or requirement.extras):
            seen.add(key)
            _runtime_closure(requirement.name, frozenset(requirement.extras), seen)
    return seen


def test_every_runtime_dependency_with_the_postgres_extra_is_a_resource() -> None:
    resources = {_key(name) for name in re.findall(r'^  resource "([^"]+)" do$', FORMULA.read_text(), re.M)}
    needed = {SDIST_FOR.get(key, key) for key in _runtime_closure("postrun", frozenset({"postgres"}), set())}
    assert needed - resources == set()
    assert resources - needed == set()  # a stale resource is a build Homebrew does for nothing


def test_each_resource_pins_a_pypi_sdist_and_its_sha256() -> None:
    blocks = re.findall(
        r'^  resource "([^"]+)" do\n    url "([^"]+)"\n    sha256 "([0-9a-f]{64})"\n  end$', FORMULA.read_text(), re.M
    )
    assert len(blocks) == FORMULA.read_text().count('  resource "')
    for name, url, _sha in blocks:
        assert url.startswith("https://files.pythonhosted.org/packages/") and url.endswith(".tar.gz"), name
        assert _key(url.rsplit("/", 1)[1]).startswith(_key(name) + "-"), (name, url)
