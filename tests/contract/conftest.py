from __future__ import annotations

import pytest

from .support import Harness, rules_revision


@pytest.fixture(scope="module")
def harness() -> Harness:
    """A servicer for calls that leave the daemon's catalog alone (decisions use request catalogs)."""
    return Harness()


@pytest.fixture
def fresh() -> Harness:
    """A servicer of its own, for calls that change the catalog."""
    return Harness()


@pytest.fixture(scope="session")
def revision() -> str:
    return rules_revision()
