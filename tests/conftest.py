"""Fixtures every test folder can use."""

import os
import tempfile

from testkit.cluster import gpu_nodes, kube_cluster

__all__ = ["gpu_nodes", "kube_cluster"]

# The daemons the tests start keep their catalog parse caches here, not in the user's ~/.cache.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="policyd-test-cache-")
