"""The chart (charts/policyd) as operators meet it: the real helm, built from its Go module beside
kubectl (tests/cluster/build.sh), run as a subprocess with its state in a directory of the test's
own. ``render`` is ``helm template``'s output as objects: what the tests that check the shipped
manifests read."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from testkit.shared import REPO

if TYPE_CHECKING:
    from testkit.cluster import Cluster

HELM = REPO / "tests" / "cluster" / "bin" / "helm"
CHART = REPO / "charts" / "policyd"
NAMESPACE = "ome"
# helm's cache, configuration and data (repositories, plugins): not the user's ~/.cache and ~/.config
_HOME = Path(tempfile.mkdtemp(prefix="policyd-helm-"))


class HelmError(AssertionError):
    """helm exited non-zero: its stderr says why."""


def helm(
    *args: str, kubeconfig: Path | None = None, values: Mapping[str, Any] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``helm ARGS`` (with ``--values`` a file of ``values`` when given); raises HelmError naming its
    stderr when it fails and ``check``."""
    if not HELM.exists():
        raise FileNotFoundError(f"{HELM} is missing: run bash tests/cluster/build.sh")
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(_HOME / "cache"),
        "HELM_CONFIG_HOME": str(_HOME / "config"),
        "HELM_DATA_HOME": str(_HOME / "data"),
    }
    env.pop("KUBECONFIG", None)
    argv = [str(HELM), *args]
    if kubeconfig is not None:
        argv += ["--kubeconfig", str(kubeconfig)]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=_HOME) as file:
        if values is not None:
            file.write(json.dumps(values))
            file.flush()
            argv += ["--values", file.name]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=False)
    if check and done.returncode != 0:
        raise HelmError(f"helm {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done


def template(
    values: Mapping[str, Any] | None = None, namespace: str = NAMESPACE, kubeconfig: Path | None = None
) -> str:
    """``helm template`` of the chart: offline, or with ``kubeconfig`` against that cluster
    (``--dry-run=server``: the chart's lookups read it)."""
    args = ["template", "policyd", str(CHART), "--namespace", namespace]
    if kubeconfig is not None:
        args.append("--dry-run=server")
    return helm(*args, kubeconfig=kubeconfig, values=values).stdout


def objects(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


@functools.cache
def _rendered(values: str, namespace: str) -> str:
    return template(json.loads(values), namespace)


def render(values: Mapping[str, Any] | None = None, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The chart's objects for ``values`` (the defaults when None), rendered once a session. The
    generated certificates are the same for the same values within a session."""
    return objects(_rendered(json.dumps(values or {}, sort_keys=True), namespace))


def named(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def rbac(*components: str) -> list[dict[str, Any]]:
    """The chart's RBAC objects of the given pieces (their app.kubernetes.io/name), as rendered
    into the `ome` namespace."""
    return [
        d
        for d in render()
        if d["kind"] in RBAC_KINDS and d["metadata"]["labels"]["app.kubernetes.io/name"] in components
    ]


def webhook_configurations(cluster: Cluster, release: str) -> list[dict[str, Any]]:
    """The validating and mutating webhook configurations a release installed, as the cluster has them."""
    kinds = "validatingwebhookconfigurations,mutatingwebhookconfigurations"
    listed = cluster.kubectl("get", kinds, "-l", f"app.kubernetes.io/instance={release}", "-o", "json").stdout
    items: list[dict[str, Any]] = json.loads(listed)["items"]
    return items
