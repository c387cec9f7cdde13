"""The shipped RBAC is enough: the controller runs the spec's stories with a ServiceAccount
token bound to exactly clients/controller/deploy/rbac.yaml, and is never refused."""

from __future__ import annotations

import base64
import contextlib
import copy
from pathlib import Path

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from .manifests import NAMED_ISVC, NAMED_RUNTIME, named_isvc, named_model, named_runtime
from .support import DEPLOY, World, eventually, running

SERVICE_ACCOUNT, NAMESPACE = "policyd", "ome"


def service_account_kubeconfig(world: World, path: Path) -> Path:
    """A kubeconfig with a bound token of the shipped ServiceAccount, as a pod gets one."""
    with contextlib.suppress(ApiException):
        world.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
    for doc in yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text()):
        world.apply(doc)
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600))
    token = world.core.create_namespaced_service_account_token(SERVICE_ACCOUNT, NAMESPACE, request).status.token
    admin = yaml.safe_load(world.cluster.kubeconfig.read_text())
    ca = admin["clusters"][0]["cluster"]["certificate-authority-data"]
    assert base64.b64decode(ca)
    cluster = {"server": world.cluster.server, "certificate-authority-data": ca}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "test", "cluster": cluster}],
                "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
                "contexts": [{"name": "sa", "context": {"cluster": "test", "user": SERVICE_ACCOUNT}}],
                "current-context": "sa",
            }
        )
    )
    return path


def test_a_refusal_is_told_by_the_log_records_status_field_not_digits_anywhere_in_it() -> None:
    assert not refused({"time": 1796198491.403428, "msg": "waiting to hold the lease ome/policy-controller"})
    assert not refused({"time": 1.0, "msg": "InferenceService a/b: RuntimeReady True", "seconds": 0.403})
    assert refused({"time": 1.0, "msg": "InferenceService a/b: Kubernetes API: 403 Forbidden: no", "status": 403})
    assert not refused({"time": 1.0, "msg": "InferenceService a/b: Kubernetes API: 409 Conflict", "status": 409})


def deployments(world: World) -> list[str]:
    return [name for kind, name in world.workloads(NAMED_ISVC) if kind == "Deployment"]


def test_the_controller_does_its_whole_job_with_exactly_the_shipped_rbac(world: World) -> None:
    kubeconfig = service_account_kubeconfig(world, world.tmp / "sa.kubeconfig")
    unsupported = copy.deepcopy(named_runtime())
    unsupported["spec"]["supportedModelFormats"][0]["modelArchitecture"] = "Qwen2ForCausalLM"
    unsupported["spec"]["decoderConfig"] = copy.deepcopy(unsupported["spec"]["engineConfig"])
    world.apply(named_model())
    world.apply(unsupported)
    with_decoder = named_isvc()
    with_decoder["spec"]["decoder"] = {"minReplicas": 1, "maxReplicas": 1}
    with running(world, "--leader-election-namespace", NAMESPACE, kubeconfig=kubeconfig) as controller:
        world.apply(with_decoder)
        eventually(lambda: world.events(NAMED_ISVC, "RuntimeCompatibilityAdvisory"), what="an event recorded")
        eventually(lambda: len(deployments(world)) == 2, what="both Deployments applied")
        world.apply(named_isvc())
        eventually(lambda: len(deployments(world)) == 1, what="the decoder's deleted")
        world.delete("ClusterServingRuntime", NAMED_RUNTIME)
        eventually(lambda: world.events(NAMED_ISVC, "RuntimeNotFound"), what="RuntimeNotFound recorded")
        world.apply(unsupported)
        eventually(lambda: world.runtime_ready(NAMED_ISVC)["reason"] == "RuntimeResolved", what="resolved again")
        lease = client.CoordinationV1Api(world.api).read_namespaced_lease("policy-controller", NAMESPACE)
        assert lease.spec.holder_identity.endswith(f"_{controller.proc.pid}")
        assert [e for e in controller.logs() if refused(e)] == []


def refused(entry: dict[str, object]) -> bool:
    """A log record of a request the API server refused (403 Forbidden): the controller gives each
    failed request's HTTP status as the record's ``status`` field (a timestamp's digits can read 403)."""
    return entry.get("status") == 403
