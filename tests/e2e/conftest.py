"""Fixtures of the browser tests: one headless Chromium per module, a signed-in page per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import Watched, chromium, open_signed_in


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def watched(browser: Any, server: Any) -> Iterator[Watched]:
    """A desktop page signed in to the module's ``server``; it fails the test on any error it saw."""
    opened = open_signed_in(browser, server)
    yield opened
    opened.close()
