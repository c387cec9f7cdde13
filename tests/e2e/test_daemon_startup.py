"""Starting policyd as an operator does: a busy address is refused, bad flags are one line and
exit 2, metrics bind the --listen host, --version and --help, an installed wheel has its rules."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from testkit.certs import CA, Pair
from testkit.cluster import Cluster
from testkit.helm import render
from testkit.ports import free_port

from policyd.clients.policyctl.conformance.daemons import serving, wait_serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb
from policyd.policy.loader import load_policy

from .support import REPO, RULES, RUNTIME_NAME, spec_manifest, started

DAEMON = [sys.executable, "-m", "policyd.daemon.main"]


def policyd(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """A policyd that must exit by itself (it refuses to start)."""
    return subprocess.run([*DAEMON, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO)


def refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    """Exit 2 with one line on stderr naming the problem, and no traceback."""
    errors = [line for line in result.stderr.splitlines() if not line.startswith("{")]  # JSON log lines aside
    assert result.returncode == 2, result.stderr
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in errors[0], errors[0]


def _status(address: str) -> pb.GetStatusResponse:
    with grpc.insecure_channel(address) as channel:
        reply: pb.GetStatusResponse = policy_pb2_grpc.PolicyServiceStub(channel).GetStatus(
            pb.GetStatusRequest(), timeout=10
        )
        return reply


def _serving(address: str, timeout: float = 3) -> bool:
    try:
        with grpc.insecure_channel(address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout)
    except grpc.RpcError:
        return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def test_a_second_daemon_on_a_busy_port_is_refused(tmp_path: Path) -> None:
    args = ["--rules", str(RULES), "--log-level", "warning"]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        second = policyd(*args, "--listen", address, "--catalog", str(tmp_path))
        refused(second, "address already in use", address)
        assert _serving(address)  # the first one keeps the port and its traffic


def test_a_live_unix_socket_is_not_taken_over(tmp_path: Path) -> None:
    args = ["--rules", str(RULES), "--log-level", "warning"]
    with serving("policyd.daemon.main", args, f"unix:{tmp_path}/policyd.sock") as address:
        second = policyd(*args, "--listen", address)
        refused(second, "address already in use")
        assert (tmp_path / "policyd.sock").is_socket()
        assert _serving(address)


def test_a_socket_left_behind_by_a_dead_daemon_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "policyd.sock"
    with socket.socket(socket.AF_UNIX) as stale:
        stale.bind(str(path))  # bound, never listening: what a killed process leaves
    with serving("policyd.daemon.main", ["--rules", str(RULES), "--log-level", "warning"], f"unix:{path}") as address:
        assert _serving(address)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--listen", "127.0.0.1:70000"], ["--listen", "70000", "0 to 65535"]),
        (["--listen", "127.0.0.1:http"], ["--listen", "0 to 65535"]),
        (["--listen", "50051"], ["--listen", "host:port or unix:PATH"]),
        (["--catalog", str(REPO / "README.md")], ["--catalog", "README.md is a file"]),
        (["--catalog", "/nonexistent/catalog"], ["--catalog", "/nonexistent/catalog does not exist"]),
        (["--log-level", "foo"], ["--log-level", "'foo'", "debug, info, warning, error"]),
        (["--workers", "0"], ["--workers", "at least 1"]),
        (["--decision-cache-mb", "-1"], ["--decision-cache-mb", "at least 0"]),
        (["--metrics-port", "99999"], ["--metrics-port", "0 to 65535"]),
        (["--decision-log", "/proc/no/such/dir/decisions.log"], ["decision log", "/proc/no/such/dir/decisions.log"]),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_2(args: list[str], words: list[str]) -> None:
    refused(policyd("--rules", str(RULES), "--listen", "127.0.0.1:0", *args), *words)


def test_a_busy_metrics_port_is_refused() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = policyd("--rules", str(RULES), "--listen", "127.0.0.1:0", "--metrics-port", str(port))
        refused(result, "metrics", f"127.0.0.1:{port}", "address already in use")


def test_metrics_bind_the_listen_host_not_every_interface() -> None:
    port = free_port()
    args = ["--rules", str(RULES), "--log-level", "warning", "--metrics-port", str(port)]
    with serving("policyd.daemon.main", args, "127.0.0.1:0"):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            assert b"policyd_rules_revision_info" in reply.read()
        # 127.0.0.2 is this machine too: only a server bound to 0.0.0.0 answers there
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.2", port), timeout=3).close()


def test_version_and_help_with_defaults() -> None:
    version = policyd("--version")
    assert version.returncode == 0
    assert version.stdout.strip() == "policyd 0.1.0"
    help_text = policyd("--help")
    assert help_text.returncode == 0
    for default in ("127.0.0.1:50051", "(info)", "(8)", "(64)", "(json)", str(RULES.resolve())):
        assert default in help_text.stdout, default


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project built as a wheel and installed into a directory of its own (returned)."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for name in ("policyd", "rules"):
        shutil.copytree(REPO / name, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist", source], check=True)
    (wheel,) = (tmp_path / "dist").glob("policyd-*.whl")
    site = tmp_path / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", site, wheel], check=True)
    return site


def test_the_wheel_installs_policyd_alone_with_its_clients_in_its_namespace(installed_wheel: Path) -> None:
    """No top-level package but policyd's own (a `clients` package would collide with others')."""
    site = installed_wheel
    packages = {p.name for p in site.iterdir() if p.is_dir() and not p.name.endswith(".dist-info")} - {"bin"}
    assert packages == {"policyd"}
    assert (site / "policyd" / "clients" / "renderer" / "engines" / "sglang-pd.yaml").is_file()


def test_an_installed_wheel_serves_its_bundled_rules_by_default(installed_wheel: Path, tmp_path: Path) -> None:
    site = installed_wheel
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    where = subprocess.run(
        [sys.executable, "-c", "import policyd.daemon.main as m; print(m.DEFAULT_RULES)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip().startswith(str(site))  # the wheel's copy, not this checkout's
    ready = tmp_path / "ready"
    command = [site / "bin" / "policyd", "--listen", "127.0.0.1:0", "--ready-file", ready, "--log-level", "warning"]
    with started(command, ready, cwd=tmp_path, env=env):
        wait_serving(ready.read_text(), 30)
        assert _status(ready.read_text()).revisions.rules_revision == load_policy(RULES).revision


def _flag(args: list[str], name: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in args if a.startswith(f"{name}=")]
    return value


# the chart's objects with cert-manager's Certificates, which say each Secret's common name and usages
CERT_MANAGER = {"certManager": {"enabled": True}}
POD_IP = "127.0.0.2"  # this machine too; only what listens on 0.0.0.0 answers there, as on a pod's IP


def _common_name(secret_name: str) -> str:
    """The commonName of the shipped cert-manager Certificate whose Secret is ``secret_name``."""
    docs = render(CERT_MANAGER)
    (name,) = [
        d["spec"]["commonName"] for d in docs if d["kind"] == "Certificate" and d["spec"]["secretName"] == secret_name
    ]
    return str(name)


def _pod_files(
    tmp_path: Path, pod: dict[str, Any], container: dict[str, Any], docs: list[dict[str, Any]], ca: CA
) -> Callable[[str], str]:
    """``local(path)``: where the test puts the file ``path`` of the container's mounts, written as
    the pod would see it: a Secret as cert-manager writes it (tls.crt, tls.key, ca.crt: a
    certificate for the Secret's Certificate, of the test's CA), a ConfigMap's data as shipped."""
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"].rstrip("/"): volumes[m["name"]] for m in container["volumeMounts"]}
    configmaps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}

    def local(path: str) -> str:
        (mount,) = [m for m in mounts if path.startswith(f"{m}/")]
        volume = mounts[mount]
        here = tmp_path / "pod" / volume["name"]
        if not here.exists():
            here.mkdir(parents=True)
            if "secret" in volume:
                (certificate,) = [
                    d
                    for d in docs
                    if d["kind"] == "Certificate" and d["spec"]["secretName"] == volume["secret"]["secretName"]
                ]
                pair = ca.issue(certificate["metadata"]["name"], server="server auth" in certificate["spec"]["usages"])
                (here / "tls.crt").write_bytes(pair.cert.read_bytes())
                (here / "tls.key").write_bytes(pair.key.read_bytes())
                (here / "ca.crt").write_bytes(ca.path.read_bytes())
            else:
                for key, text in configmaps[volume["configMap"]["name"]]["data"].items():
                    (here / key).write_text(text)
        local_path = here / Path(path).relative_to(mount)
        assert local_path.is_file(), f"{path}: {volume} provides no such file"
        return str(local_path)

    return local


def _credentials(ca: CA, client: Pair | None = None) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        ca.path.read_bytes(), client.key.read_bytes() if client else None, client.cert.read_bytes() if client else None
    )


def _code(call: Callable[[], object]) -> grpc.StatusCode:
    try:
        call()
    except grpc.RpcError as err:
        return err.code()  # type: ignore[no-any-return,attr-defined]
    return grpc.StatusCode.OK


def _api_call(address: str, credentials: grpc.ChannelCredentials, rpc: str, request: Any, wait: bool = True) -> Any:
    """One call over TLS; the certificate is checked for ``localhost`` (the test CA's server
    certificate names it, as the shipped one does). ``wait``: until the channel connects (False:
    a refused handshake fails the call at once)."""
    options = [("grpc.ssl_target_name_override", "localhost")]
    with grpc.secure_channel(address, credentials, options) as channel:
        stub = policy_pb2_grpc.PolicyServiceStub(channel)
        return getattr(stub, rpc)(request, timeout=30, wait_for_ready=wait)


def _apply_request() -> pb.ApplyObjectsRequest:
    doc = spec_manifest("004", "ServingRuntime", RUNTIME_NAME)
    return pb.ApplyObjectsRequest(objects=[rpb.Object(manifest=json.dumps(doc))])


def test_the_shipped_deployment_serves_health_in_plaintext_and_the_api_with_mtls_and_authz_on_the_pod_network(
    tmp_path: Path, kube_cluster: Cluster
) -> None:
    """policyd started with the Deployment's own args (its files made here, its ports free ones, the
    test control plane as the cluster it watches): the kubelet's gRPC probe, plaintext, reaches
    health checking on the pod IP, SERVING once every kind is listed; the API there takes only
    clients with a certificate of the CA, and the shipped authz ConfigMap lets policy-controller
    and policy-webhook read, and nobody write (the catalog is the cluster's)."""
    docs = render(CERT_MANAGER)
    (deployment,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "policyd"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["policyd"]
    args = list(container["args"])
    assert "--cluster" in args
    listen, probe = _flag(args, "--listen"), _flag(args, "--health-listen")
    assert listen.startswith("0.0.0.0:") and probe.startswith("0.0.0.0:")
    assert int(probe.rpartition(":")[2]) == container["readinessProbe"]["grpc"]["port"]
    assert int(probe.rpartition(":")[2]) in [p["containerPort"] for p in container["ports"]]
    ca = CA(tmp_path / "pki")
    local = _pod_files(tmp_path, pod, container, docs, ca)
    api_port, health_port = free_port(), free_port()  # the Deployment's own ports may be taken on this machine
    replaced = {
        "--listen": f"0.0.0.0:{api_port}",
        "--health-listen": f"0.0.0.0:{health_port}",
        "--metrics-port": str(free_port()),
        **{flag: local(_flag(args, flag)) for flag in ("--tls-cert", "--tls-key", "--tls-client-ca", "--authz")},
        "--rules": str(RULES),  # what the chart's rules ConfigMap holds by default
    }
    args = [
        f"{a.split('=', 1)[0]}={replaced[a.split('=', 1)[0]]}" if a.split("=", 1)[0] in replaced else a for a in args
    ]
    args += ["--kubeconfig", str(kube_cluster.kubeconfig)]  # a pod has its service account's token instead
    controller, webhook = (
        ca.issue(_common_name(s)) for s in ("policy-controller-client-cert", "policy-webhook-client-cert")
    )
    ready = tmp_path / "ready"
    with started([*DAEMON, *args, "--ready-file", str(ready)], ready, timeout=90):
        health = f"{POD_IP}:{health_port}"  # the kubelet's probe: plaintext, on the pod IP
        deadline = time.monotonic() + 60
        while not _serving(health, timeout=5):  # NOT_SERVING until every kind is listed
            assert time.monotonic() < deadline, "policyd did not list the cluster within 60 s"
            time.sleep(0.1)
        api = f"{POD_IP}:{api_port}"
        assert not _serving(api, timeout=5)  # the API speaks no plaintext
        no_certificate = _credentials(ca)
        refused = _code(lambda: _api_call(api, no_certificate, "GetStatus", pb.GetStatusRequest(), wait=False))
        assert refused == grpc.StatusCode.UNAVAILABLE
        for name, pair in (("policy-webhook", webhook), ("policy-controller", controller)):
            reader = _credentials(ca, pair)
            assert _api_call(api, reader, "GetStatus", pb.GetStatusRequest()).catalog_source == "cluster"
            with pytest.raises(grpc.RpcError) as denied:  # a reader: the catalog is the cluster's
                _api_call(api, reader, "ApplyObjects", _apply_request())
            assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED, denied.value
            assert f"{name} may not call ApplyObjects" in str(denied.value.details()), denied.value
