"""A control plane of the chart tests' own: the chart's objects are cluster-wide (ClusterRoles,
OME's webhook configurations), so installing it must not meet the other tests' clusters."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit.cluster import Cluster

CRDS = Path(__file__).parent / "crds"


@pytest.fixture(scope="package")
def helm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """With cert-manager's and the Prometheus operator's CRDs (tests/helm/crds), established."""
    cluster = Cluster(tmp_path_factory.mktemp("helm-cluster"))
    try:
        cluster.up()
        cluster.kubectl("apply", "-f", str(CRDS))
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        yield cluster
    finally:
        cluster.down()
        shutil.rmtree(cluster.directory, ignore_errors=True)
