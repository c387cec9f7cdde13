"""Fixtures every test folder can use."""

import os
import tempfile
from pathlib import Path

import pytest
from testkit.cluster import gpu_nodes, kube_cluster

__all__ = ["gpu_nodes", "kube_cluster"]

# The daemons the tests start keep their catalog parse caches here, not in the user's ~/.cache.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="policyd-test-cache-")


@pytest.fixture
def private_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty $TMPDIR for the processes the test starts (they take the test's environment)."""
    directory = tmp_path / "tmpdir"
    directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(directory))
    return directory
