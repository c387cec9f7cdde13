"""A real Kubernetes cluster for the tests that talk to Kubernetes: etcd, kube-apiserver,
kube-controller-manager and kube-scheduler built from their Go modules (tests/cluster), and KWOK,
which runs the pods of fake GPU nodes; started once per session by ``tests/cluster/up.sh`` and
stopped by ``down.sh``. Use the ``kube_cluster`` fixture, and ``gpu_nodes`` for the nodes."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes import client, config, dynamic
from kubernetes.client.exceptions import ApiException

from testkit.shared import REPO

SCRIPTS = REPO / "tests" / "cluster"
NODES = REPO / "examples" / "cluster"  # the docs' fake GPU nodes and their AcceleratorClasses


@dataclass(frozen=True)
class Cluster:
    directory: Path

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    def _ports(self) -> dict[str, str]:
        lines = (self.directory / "cluster.env").read_text().split()
        return dict(line.split("=", 1) for line in lines)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self._ports()['APISERVER_PORT']}"

    def api(self) -> client.ApiClient:
        """An admin client (system:masters)."""
        return config.new_client_from_config(str(self.kubeconfig))

    def token_kubeconfig(self, namespace: str, account: str, path: Path) -> Path:
        """A kubeconfig at ``path`` with a bound token of the ServiceAccount, as a pod gets one."""
        spec = client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
        request = client.AuthenticationV1TokenRequest(spec=spec)
        token = client.CoreV1Api(self.api()).create_namespaced_service_account_token(account, namespace, request)
        ca = yaml.safe_load(self.kubeconfig.read_text())["clusters"][0]["cluster"]["certificate-authority-data"]
        assert base64.b64decode(ca)
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "test", "cluster": {"server": self.server, "certificate-authority-data": ca}}],
            "users": [{"name": account, "user": {"token": token.status.token}}],
            "contexts": [{"name": "sa", "context": {"cluster": "test", "user": account}}],
            "current-context": "sa",
        }
        path.write_text(yaml.safe_dump(kubeconfig))
        return path

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """The real kubectl, as a user runs it, with the admin kubeconfig."""
        return subprocess.run(
            [str(SCRIPTS / "bin" / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=check,
            timeout=120,
        )

    def up(self) -> None:
        subprocess.run(["bash", str(SCRIPTS / "up.sh"), str(self.directory)], check=True, stdout=subprocess.DEVNULL)

    def down(self) -> None:
        subprocess.run(["bash", str(SCRIPTS / "down.sh"), str(self.directory)], check=True)

    def stop_apiserver(self, grace: float = 3.0) -> None:
        """SIGTERM kube-apiserver, SIGKILL it if it is still there after ``grace`` seconds (it
        waits up to a minute for clients that stopped reading); etcd keeps running."""
        pid = int((self.directory / "kube-apiserver.pid").read_text())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while Path(f"/proc/{pid}").exists():
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + 30
            time.sleep(0.1)

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port and data."""
        self.stop_apiserver()
        self.up()

    def _etcd(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        url = f"http://127.0.0.1:{self._ports()['ETCD_PORT']}{path}"
        request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            answer: dict[str, Any] = json.load(reply)
            return answer

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision (what kube-apiserver does every few
        minutes); watches that resume from an older resourceVersion then get 410 Gone."""
        key = base64.b64encode(b"/").decode()
        revision = int(self._etcd("/v3/kv/range", {"key": key, "limit": 1})["header"]["revision"])
        self._etcd("/v3/kv/compaction", {"revision": revision, "physical": True})
        return revision


def accepted_by_a_dry_run(
    api: client.ApiClient, docs: Iterable[Mapping[str, Any]], namespace: str, manager: str
) -> None:
    """Shipped manifests as the API server takes them: valid against the Kubernetes schemas
    offline (strict: no unknown fields), then server-side applied with dry run into ``namespace``
    (created when missing)."""
    with contextlib.suppress(ApiException):  # 409: there already
        client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    resources = dynamic.DynamicClient(api).resources
    for doc in docs:
        kubernetes_validate.validate(doc, "1.32", strict=True)
        resource = resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        resource.server_side_apply(body=doc, field_manager=manager, dry_run="All")


@contextlib.contextmanager
def control_plane(keep: Path | None, prefix: str) -> Iterator[Path]:
    """A control plane of its own, for a benchmark: in ``keep`` (left there), else in a new
    temporary directory (removed). Stopped at the end whatever happened."""
    cluster = Cluster(keep or Path(tempfile.mkdtemp(prefix=prefix)))
    try:
        cluster.up()
        yield cluster.directory
    finally:
        subprocess.run(["bash", str(SCRIPTS / "down.sh"), str(cluster.directory)], check=False)
        if keep is None:
            shutil.rmtree(cluster.directory, ignore_errors=True)


def add_gpu_nodes(cluster: Cluster) -> None:
    """Apply the docs' fake nodes and AcceleratorClasses with kubectl; wait until KWOK has every
    node Ready and the node lifecycle controller has lifted the not-ready taint it puts on a new
    node (until then the scheduler places nothing there)."""
    cluster.kubectl("apply", "-f", str(NODES / "gpu-nodes.yaml"), "-f", str(NODES / "accelerator-classes.yaml"))
    cluster.kubectl("wait", "--for=condition=Ready", "node", "-l", "type=kwok", "--timeout=60s")

    def schedulable() -> bool:
        nodes = json.loads(cluster.kubectl("get", "nodes", "-l", "type=kwok", "-o", "json").stdout)["items"]
        taints = [t for n in nodes for t in (n["spec"].get("taints") or [])]
        return not any(t["key"].startswith("node.kubernetes.io/") for t in taints)

    deadline = time.monotonic() + 120
    while not schedulable():
        assert time.monotonic() < deadline, "the fake nodes kept the node lifecycle controller's taints"
        time.sleep(0.2)


@pytest.fixture(scope="session")
def gpu_nodes(kube_cluster: Cluster) -> Cluster:
    """The session's cluster with the fake GPU nodes (examples/cluster) in it."""
    add_gpu_nodes(kube_cluster)
    return kube_cluster


@pytest.fixture(scope="session")
def kube_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One control plane for the session; tests keep to namespaces of their own."""
    cluster = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.down()
