"""The chart's pods run here, as the kubelet would run them: the test control plane's nodes are
fake (KWOK), so each container's command runs as a local process with the args, environment and
files the installed Deployments give it. The kubelet's part is done from the live objects: each
Secret and ConfigMap volume projected into a directory as the kubelet lays one out (the files are
links through ``..data``, swapped at once on a change), each emptyDir a directory, the pod's
service account a kubeconfig with a token of it (the in-cluster configuration), the pod network
127.0.0.1: every port a container declares gets a free local port, ``0.0.0.0`` is ``127.0.0.1``,
and policyd's headless Service name resolves to its replicas' API addresses."""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testkit.cluster import Cluster
from testkit.ports import free_port

HEADLESS = re.compile(r"dns:///policyd-headless\.[a-z0-9-]+\.svc:\d+")


def project(directory: Path, files: Mapping[str, bytes]) -> None:
    """Lay ``files`` out in ``directory`` as the kubelet's atomic writer does: a new timestamped
    directory, ``..data`` swapped to it by one rename, each file a link through ``..data``."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = directory / f"..{datetime.datetime.now(datetime.UTC):%Y_%m_%d_%H_%M_%S.%f}"
    stamp.mkdir()
    for name, content in files.items():
        (stamp / name).write_bytes(content)
    old = os.readlink(directory / "..data") if (directory / "..data").is_symlink() else None
    (directory / "..data_tmp").symlink_to(stamp.name)
    os.rename(directory / "..data_tmp", directory / "..data")
    for name in files:
        if not (directory / name).is_symlink():
            (directory / name).symlink_to(f"..data/{name}")
    for link in directory.iterdir():
        if link.is_symlink() and not link.name.startswith("..") and link.name not in files:
            link.unlink()
    if old is not None:
        shutil.rmtree(directory / old)


def volume_files(cluster: Cluster, namespace: str, volume: Mapping[str, Any]) -> dict[str, bytes] | None:
    """A Secret's or ConfigMap's files as the API server has them now; None for an emptyDir."""
    if "emptyDir" in volume:
        return None
    kind, name = (
        ("secret", volume["secret"]["secretName"]) if "secret" in volume else ("configmap", volume["configMap"]["name"])
    )
    obj = json.loads(cluster.kubectl("get", kind, name, "-n", namespace, "-o", "json").stdout)
    if kind == "secret":
        return {k: base64.b64decode(v) for k, v in obj["data"].items()}
    return {k: v.encode() for k, v in obj["data"].items()}


@dataclass
class Container:
    pod: str
    name: str
    argv: list[str]
    env: dict[str, str]
    ports: dict[str, int]  # port name -> local port
    log: Path
    process: subprocess.Popen[bytes] | None = None


@dataclass
class Pod:
    """One replica of a Deployment: its volumes (volume name -> local directory) and containers."""

    name: str
    namespace: str
    spec: dict[str, Any]
    root: Path
    volumes: dict[str, Path] = field(default_factory=dict)
    containers: dict[str, Container] = field(default_factory=dict)

    def mounted(self, container: Mapping[str, Any]) -> list[tuple[str, Path]]:
        """The container's mount paths and where each is here, the longest first."""
        mounts = [(m["mountPath"], self.volumes[m["name"]]) for m in container.get("volumeMounts", [])]
        return sorted(mounts, key=lambda m: -len(m[0]))

    def project(self, cluster: Cluster, instead: Mapping[str, Mapping[str, bytes]] | None = None) -> None:
        """Every Secret and ConfigMap volume again, as the kubelet does when they change; a volume
        ``instead`` names gets those files."""
        for volume in self.spec["volumes"]:
            files = (instead or {}).get(volume["name"]) or volume_files(cluster, self.namespace, volume)
            if files is not None:
                project(self.volumes[volume["name"]], files)


def sidecars(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The pod's native sidecars: init containers that keep running (restartPolicy Always)."""
    return [c for c in spec.get("initContainers", []) if c.get("restartPolicy") == "Always"]


def local(word: str, mounts: list[tuple[str, Path]], ports: Mapping[int, int], headless: str) -> str:
    """One word of a command line (or an environment value) as it reads here: the path in it (after
    the start, ``=`` or ``:``) on the longest mount that holds it, the addresses on 127.0.0.1."""
    word = HEADLESS.sub(headless, word)
    for mount_path, here in mounts:
        found = re.search(rf"(^|[=:]){re.escape(mount_path.rstrip('/'))}(?=/|$)", word)
        if found:
            word = word[: found.end(1)] + str(here) + word[found.end() :]
            break
    word = word.replace("0.0.0.0", "127.0.0.1")
    for container_port, local_port in ports.items():
        word = re.sub(rf"(?<=[:=]){container_port}$", str(local_port), word)
        if word == str(container_port):
            word = str(local_port)
    return word


class Pods:
    """The installed chart's Deployments as local pods; every process is stopped at ``stop``."""

    def __init__(self, cluster: Cluster, namespace: str, root: Path, bin_dir: Path) -> None:
        self.cluster, self.namespace, self.root, self.bin_dir = cluster, namespace, root, bin_dir
        self.pods: list[Pod] = []

    def deployment(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(
            self.cluster.kubectl("get", "deployment", name, "-n", self.namespace, "-o", "json").stdout
        )
        return found

    def lay_out(self, deployment: str, replica: int, instead: Mapping[str, Mapping[str, bytes]] | None = None) -> Pod:
        """A replica's volumes (``instead``: Pod.project) and the account's kubeconfig; its
        containers' ports chosen."""
        spec = self.deployment(deployment)["spec"]["template"]["spec"]
        pod = Pod(f"{deployment}-{replica}", self.namespace, spec, self.root / f"{deployment}-{replica}")
        for volume in spec["volumes"]:
            pod.volumes[volume["name"]] = pod.root / "volumes" / volume["name"]
            pod.volumes[volume["name"]].mkdir(parents=True)
        pod.project(self.cluster, instead)
        kubeconfig = self.cluster.token_kubeconfig(self.namespace, spec["serviceAccountName"], pod.root / "kubeconfig")
        for container in [*sidecars(spec), *spec["containers"]]:
            ports = {p["name"]: free_port() for p in container.get("ports", [])}
            env = {
                "PATH": f"{self.bin_dir}:{os.environ['PATH']}",
                "HOME": "/nonexistent",  # the image's: nothing may be written there
                "KUBECONFIG": str(kubeconfig),  # the pod's service account
                "GRPC_VERBOSITY": "ERROR",
            }
            pod.containers[container["name"]] = Container(
                pod.name, container["name"], [], env, ports, pod.root / f"{container['name']}.log"
            )
        self.pods.append(pod)
        return pod

    def start(self, pod: Pod, headless: str) -> None:
        """The native sidecars first, each waited for until its startupProbe passes, as the kubelet
        does; then the containers. Each command made local, a process of its own."""
        for sidecar in sidecars(pod.spec):
            self._run(pod, sidecar, headless)
            probe = sidecar.get("startupProbe", {}).get("exec")
            if probe:
                self._wait_for_probe(pod, sidecar, probe["command"], headless)
        for container in pod.spec["containers"]:
            self._run(pod, container, headless)

    def _local(self, pod: Pod, container: Mapping[str, Any], words: list[str], headless: str) -> list[str]:
        here = pod.containers[container["name"]]
        declared = {p["containerPort"]: here.ports[p["name"]] for p in container.get("ports", [])}
        return [local(w, pod.mounted(container), declared, headless) for w in words]

    def _run(self, pod: Pod, container: Mapping[str, Any], headless: str) -> None:
        here = pod.containers[container["name"]]
        here.argv = self._local(pod, container, [*container["command"], *container.get("args", [])], headless)
        for var in container.get("env", []):  # the manifest's: its paths and addresses made local
            if "value" in var:
                (here.env[var["name"]],) = self._local(pod, container, [var["value"]], headless)
            elif var["valueFrom"].get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
                here.env[var["name"]] = self.namespace
        here.process = subprocess.Popen(
            here.argv,
            env=here.env,
            cwd=pod.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=here.log.open("wb"),
            start_new_session=True,
        )

    def _wait_for_probe(self, pod: Pod, container: Mapping[str, Any], command: list[str], headless: str) -> None:
        here = pod.containers[container["name"]]
        argv = self._local(pod, container, command, headless)
        deadline = time.monotonic() + 60
        while subprocess.run(argv, env=here.env, cwd=pod.root, check=False, timeout=30).returncode != 0:
            assert here.process is not None and here.process.poll() is None, here.log.read_text()[-2000:]
            assert time.monotonic() < deadline, f"{pod.name}/{here.name}'s startupProbe {argv} did not pass"
            time.sleep(0.1)

    def alive(self) -> dict[str, int]:
        """Every container's pid, checked to be running."""
        pids = {}
        for pod in self.pods:
            for name, container in pod.containers.items():
                assert container.process is not None and container.process.poll() is None, (
                    f"{pod.name}/{name} exited: {container.log.read_text()[-2000:]}"
                )
                pids[f"{pod.name}/{name}"] = container.process.pid
        return pids

    def stop(self) -> dict[str, int | None]:
        """Stop the pods in the reverse order of their start (policyd's clients before policyd, so
        no call is in flight when it stops): SIGTERM each container, SIGKILL one that has not
        exited within 30 s; their exit codes (None: killed)."""
        codes: dict[str, int | None] = {}
        for pod in reversed(self.pods):
            running = [c for c in pod.containers.values() if c.process is not None]
            for container in running:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(container.process.pid, signal.SIGTERM)  # type: ignore[union-attr]
            deadline = time.monotonic() + 30
            for container in running:
                assert container.process is not None
                try:
                    code: int | None = container.process.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(container.process.pid, signal.SIGKILL)
                    container.process.wait()
                    code = None
                codes[f"{pod.name}/{container.name}"] = code
                container.process = None
        return codes
