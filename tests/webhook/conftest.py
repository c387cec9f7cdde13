"""The webhook's serving certificates, once per module."""

from __future__ import annotations

import pytest

from .support import Certs, serving_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return serving_certs(tmp_path_factory.mktemp("webhook-certs"))
