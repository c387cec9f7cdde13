"""Fixtures every test folder can use."""

from testkit.cluster import kube_cluster

__all__ = ["kube_cluster"]
