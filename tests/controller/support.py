"""The controller's end-to-end world: the test control plane, real policyd and renderer
processes, and policy-controller processes started as an operator would start them."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import NotFoundError
from testkit.cluster import Cluster
from testkit.shared import CATALOG

from policyd.clients.controller.kube import APPLIED, WORKLOAD_KINDS
from policyd.clients.controller.main import STOP_SECONDS
from policyd.resources import kinds as ome

T = TypeVar("T")
OME = (ome.GROUP, ome.VERSION)
# the kinds a test makes and cleans up (not AcceleratorClass)
PLURALS = {kind.name: kind.plural for kind in ome.OME_KINDS if kind is not ome.ACCELERATOR_CLASS}
WORKLOADS = WORKLOAD_KINDS  # every kind the controller applies and prunes


def as_written(workload: dict[str, Any]) -> tuple[Any, Any]:
    """What the controller last wrote of a workload: its generation (moved by any change of its
    spec) and the digest it applied. Not its resourceVersion: the cluster's own controllers write
    its status and annotations (a Deployment's revision) as they run it."""
    meta = workload["metadata"]
    return meta.get("generation"), (meta.get("annotations") or {}).get(APPLIED)


def eventually(check: Callable[[], T], timeout: float = 60.0, what: str = "") -> T:
    """``check()``'s first truthy result that raises no AssertionError, polling until ``timeout``
    (sized for a loaded 2-core machine: it costs nothing when the check holds sooner)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
            if result:
                return result
            error: Exception = AssertionError(f"{what or check} is still {result!r}")
        except (AssertionError, ApiException) as err:
            error = err
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}") from error
        time.sleep(0.2)


def catalog_file(relative: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((CATALOG / relative).read_text())
    return loaded


@dataclass
class Controller:
    """A policy-controller process; its log is JSON lines."""

    proc: subprocess.Popen[bytes]
    log_path: Path

    def logs(self) -> list[dict[str, Any]]:
        lines = self.log_path.read_text().splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def logged(self, needle: str) -> list[dict[str, Any]]:
        return [entry for entry in self.logs() if needle in json.dumps(entry)]

    def stop(self, timeout: float = STOP_SECONDS + 10) -> int:
        """SIGTERM; its exit code (1, its threads' stacks in the log, when stopping hung past its bound)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)


@dataclass
class World:
    cluster: Cluster
    policyd: str
    renderer: str
    namespace: str
    tmp: Path
    api: client.ApiClient = field(init=False)
    controllers: list[Controller] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.api = self.cluster.api()
        self.custom = client.CustomObjectsApi(self.api)
        self.core = client.CoreV1Api(self.api)
        self.dynamic = dynamic.DynamicClient(self.api)
        with contextlib.suppress(ApiException):  # namespaces outlive tests (no namespace controller runs)
            self.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=self.namespace)))

    # --- processes

    def start_controller(
        self, *extra: str, kubeconfig: Path | None = None, policyd: str | None = None, env: dict[str, str] | None = None
    ) -> Controller:
        log_path = self.tmp / f"controller-{len(self.controllers)}.log"
        args = [sys.executable, "-m", "policyd.clients.controller.main"]
        if kubeconfig is not None or env is None:
            args += ["--kubeconfig", str(kubeconfig or self.cluster.kubeconfig)]
        args += ["--policyd", policyd or self.policyd, "--renderer", self.renderer]
        if "--leader-election-namespace" not in extra:
            args += ["--leader-election-namespace", self.namespace]
        args += ["--lease-duration", "3", *extra]
        # env, when given, replaces the kubeconfig lookup's variables (KUBECONFIG, HOME)
        base = {k: v for k, v in os.environ.items() if env is None or k not in ("KUBECONFIG", "HOME")}
        with log_path.open("wb") as log:
            proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env={**base, **(env or {})})
        controller = Controller(proc, log_path)
        self.controllers.append(controller)
        return controller

    # --- the cluster, as a user with kubectl would change it (server-side apply)

    def apply(self, manifest: dict[str, Any], manager: str = "kubectl") -> dict[str, Any]:
        manifest = json.loads(json.dumps(manifest))
        meta = manifest["metadata"]
        if not manifest["kind"].startswith("Cluster"):
            meta.setdefault("namespace", self.namespace)
        resource = self.dynamic.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
        applied = resource.server_side_apply(
            body=manifest,
            name=meta["name"],
            namespace=meta.get("namespace"),
            field_manager=manager,
            force_conflicts=True,
        )
        result: dict[str, Any] = applied.to_dict()
        return result

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        group, version = OME
        if kind.startswith("Cluster"):
            self.custom.delete_cluster_custom_object(group, version, PLURALS[kind], name)
        else:
            self.custom.delete_namespaced_custom_object(
                group, version, namespace or self.namespace, PLURALS[kind], name
            )

    def get(self, kind: str, name: str, namespace: str | None = None, api_version: str = "ome.io/v1beta1") -> Any:
        resource = self.dynamic.resources.get(api_version=api_version, kind=kind)
        if kind.startswith("Cluster"):
            return resource.get(name=name).to_dict()
        return resource.get(name=name, namespace=namespace or self.namespace).to_dict()

    def isvc(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.get("InferenceService", name)
        return found

    def runtime_ready(self, name: str) -> dict[str, Any] | None:
        conditions = (self.isvc(name).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "RuntimeReady"), None)

    def events(self, name: str, reason: str | None = None) -> list[Any]:
        """Events about the InferenceService ``name`` as it is now (by uid)."""
        uid = self.isvc(name)["metadata"]["uid"]
        found = self.core.list_namespaced_event(self.namespace, field_selector=f"involvedObject.uid={uid}").items
        return [e for e in found if reason is None or e.reason == reason]

    def workloads(self, isvc: str) -> dict[tuple[str, str], dict[str, Any]]:
        found = {}
        for api_version, kind in WORKLOADS:
            resource = self.dynamic.resources.get(api_version=api_version, kind=kind)
            listed = resource.get(namespace=self.namespace, label_selector=f"ome.io/inferenceservice={isvc}")
            for item in listed.to_dict()["items"]:
                found[(kind, item["metadata"]["name"])] = item
        return found

    def clean(self) -> None:
        """Remove what a test made: OME objects in its namespace and at cluster scope, workloads, leases."""
        group, version = OME
        for kind, plural in PLURALS.items():
            if kind.startswith("Cluster"):
                for item in self.custom.list_cluster_custom_object(group, version, plural)["items"]:
                    self.custom.delete_cluster_custom_object(group, version, plural, item["metadata"]["name"])
            else:
                for item in self.custom.list_namespaced_custom_object(group, version, self.namespace, plural)["items"]:
                    self.delete(kind, item["metadata"]["name"])
        # the garbage collector collects owned objects in its own time: deleted here at once, for
        # the next test (one it collected meanwhile is gone already)
        for api_version, kind in WORKLOADS:
            resource = self.dynamic.resources.get(api_version=api_version, kind=kind)
            for item in resource.get(namespace=self.namespace).to_dict()["items"]:
                with contextlib.suppress(NotFoundError):
                    resource.delete(name=item["metadata"]["name"], namespace=self.namespace)


@contextlib.contextmanager
def running(world: World, *extra: str, **kwargs: Any) -> Iterator[Controller]:
    """A controller for the block; it must stop cleanly (exit 0) on SIGTERM at the end."""
    controller = world.start_controller(*extra, **kwargs)
    eventually(lambda: controller.logged("the lease"), what="policy-controller up")
    try:
        yield controller
    except BaseException:
        controller.stop()
        raise
    code = controller.stop()
    assert code == 0, f"policy-controller exited {code}:\n{controller.log_path.read_text()[-3000:]}"
