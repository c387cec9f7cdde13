"""The shipped RBAC (the chart's, charts/policyd) is exactly enough, for each of its two
identities, against the real API server: policyd's service account may list and watch the six OME
kinds and nothing else, and policyd --cluster syncs and follows the cluster with it; the
controller runs the spec's stories with a token of its own service account, beside policyd
replicas running with theirs, balancing its calls over them, and is never refused."""

from __future__ import annotations

import contextlib
import copy
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
from kubernetes import client, config, dynamic
from kubernetes.client.exceptions import ApiException
from testkit.cluster import Cluster
from testkit.helm import rbac
from testkit.ports import free_port

from policyd.clients.policyctl.conformance.daemons import serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.resources.kinds import OME_KINDS

from .manifests import NAMED_ISVC, NAMED_RUNTIME, named_isvc, named_model, named_runtime
from .support import World, eventually, running

NAMESPACE = "ome"
CONTROLLER, POLICYD = "policy-controller", "policyd"
OME_GROUP = "ome.io"
SIX_KINDS = sorted(kind.plural for kind in OME_KINDS)  # what policyd --cluster lists and watches
BASELINE = ("rbac-baseline", "nobody")  # a ServiceAccount no shipped binding names: what any account may
Rule = tuple[str, str, str, tuple[str, ...]]  # (group, resource, verb, resource names)


def apply_rbac(api: client.ApiClient) -> None:
    """The chart's RBAC of policyd and the controller, server-side applied as rendered, in the `ome`
    namespace."""
    ensure_namespace(api, NAMESPACE)
    resources = dynamic.DynamicClient(api).resources
    for doc in rbac("policyd", "policy-controller"):
        resource = resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        resource.server_side_apply(body=doc, field_manager="controller-rbac-test", force_conflicts=True)


def ensure_namespace(api: client.ApiClient, name: str) -> None:
    with contextlib.suppress(ApiException):  # 409: there already
        client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))


def allowed(api: client.ApiClient, account: str, verb: str, resource: str, namespace: str = "") -> bool:
    """Whether the API server lets the `ome` ServiceAccount ``account`` do ``verb`` on ome.io's
    ``resource`` (a SubjectAccessReview; namespace "": across all namespaces)."""
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=f"system:serviceaccount:{NAMESPACE}:{account}",
            groups=["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}", "system:authenticated"],
            resource_attributes=client.V1ResourceAttributes(
                group=OME_GROUP, resource=resource, verb=verb, namespace=namespace
            ),
        )
    )
    return bool(client.AuthorizationV1Api(api).create_subject_access_review(review).status.allowed)


def rules_of(kubeconfig: Path, namespace: str) -> tuple[set[Rule], set[tuple[str, str]]]:
    """What the token's account may do in ``namespace``, as the API server says
    (SelfSubjectRulesReview): resource rules expanded one (group, resource, verb) a row, and
    non-resource (path, verb) pairs."""
    api = config.new_client_from_config(str(kubeconfig))
    try:
        review = client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace=namespace))
        status = client.AuthorizationV1Api(api).create_self_subject_rules_review(review).status
    finally:
        api.close()
    assert not status.incomplete, status.evaluation_error
    resources = {
        (group, resource, verb, tuple(rule.resource_names or ()))
        for rule in status.resource_rules
        for group in rule.api_groups or [""]
        for resource in rule.resources or []
        for verb in rule.verbs
    }
    paths = {
        (path, verb) for rule in status.non_resource_rules for path in rule.non_resource_urls for verb in rule.verbs
    }
    return resources, paths


@contextlib.contextmanager
def policyd_replicas(kubeconfig: Path, count: int) -> Iterator[list[tuple[str, int]]]:
    """``policyd --cluster`` processes reading the cluster with ``kubeconfig``, each once SERVING
    (every kind listed): their addresses and metrics ports."""
    with contextlib.ExitStack() as stack:
        replicas = []
        for _ in range(count):
            metrics = free_port()
            args = ["--cluster", "--kubeconfig", str(kubeconfig), "--log-level", "warning"]
            address = stack.enter_context(
                serving("policyd.daemon.main", [*args, "--metrics-port", str(metrics)], "127.0.0.1:0", timeout=90)
            )
            replicas.append((address, metrics))
        yield replicas


def status(address: str) -> pb.GetStatusResponse:
    with grpc.insecure_channel(address) as channel:
        reply: pb.GetStatusResponse = policy_pb2_grpc.PolicyServiceStub(channel).GetStatus(
            pb.GetStatusRequest(), timeout=10
        )
        return reply


def watching(address: str) -> pb.GetStatusResponse | None:
    """The replica's status once every kind is listed and its watch opened, else None."""
    reply = status(address)
    return reply if reply.kinds and all(k.synced and k.watches >= 1 for k in reply.kinds) else None


def calls_served(metrics_port: int) -> float:
    """The calls a policyd answered, all RPCs and codes (policyd_calls_total)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    return sum(float(value) for value in re.findall(r"^policyd_calls_total\{[^}]*\} (\S+)$", text, re.MULTILINE))


# -- policyd's service account ---------------------------------------------------------------------


def test_policyds_service_account_may_list_and_watch_the_six_ome_kinds_and_nothing_else(
    kube_cluster: Cluster, tmp_path: Path
) -> None:
    assert len(SIX_KINDS) == 6
    api = kube_cluster.api()
    try:
        apply_rbac(api)
        for resource in SIX_KINDS:
            for namespace in ("", NAMESPACE, "llama-demo"):  # across every namespace, and in any one
                for verb in ("list", "watch"):
                    assert allowed(api, POLICYD, verb, resource, namespace), (verb, resource, namespace)
                for verb in ("get", "create", "update", "patch", "delete", "deletecollection"):
                    assert not allowed(api, POLICYD, verb, resource, namespace), (verb, resource, namespace)
        assert not allowed(api, POLICYD, "patch", "inferenceservices/status")
        # nothing else: beside what any ServiceAccount may (a baseline one in another namespace, no
        # shipped binding naming it), exactly list and watch on the six kinds, whichever the namespace
        ensure_namespace(api, BASELINE[0])
        with contextlib.suppress(ApiException):  # 409: there already
            client.CoreV1Api(api).create_namespaced_service_account(
                BASELINE[0], client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=BASELINE[1]))
            )
        policyd = kube_cluster.token_kubeconfig(NAMESPACE, POLICYD, tmp_path / "policyd.kubeconfig")
        baseline = kube_cluster.token_kubeconfig(*BASELINE, tmp_path / "baseline.kubeconfig")
        expected = {(OME_GROUP, resource, verb, ()) for resource in SIX_KINDS for verb in ("list", "watch")}
        for namespace in (NAMESPACE, "default", BASELINE[0]):
            (mine, my_paths), (anyone, any_paths) = rules_of(policyd, namespace), rules_of(baseline, namespace)
            assert mine - anyone == expected, namespace
            assert my_paths <= any_paths, namespace
    finally:
        api.close()


def test_policyd_lists_and_watches_the_cluster_with_exactly_the_shipped_rbac(
    kube_cluster: Cluster, tmp_path: Path
) -> None:
    """policyd --cluster with a token of its ServiceAccount: ready (every kind listed), each kind's
    watch open and answered, and an object created afterwards seen through its watch."""
    api = kube_cluster.api()
    custom = client.CustomObjectsApi(api)
    model = named_model()
    model["metadata"]["name"] = "rbac-watched-model"
    try:
        apply_rbac(api)
        kubeconfig = kube_cluster.token_kubeconfig(NAMESPACE, POLICYD, tmp_path / "policyd.kubeconfig")
        with policyd_replicas(kubeconfig, 1) as [(address, _)]:
            synced = eventually(lambda: watching(address), timeout=60, what="every kind listed and watched")
            assert synced.catalog_source == "cluster"
            assert sorted(k.kind for k in synced.kinds) == sorted(kind.name for kind in OME_KINDS)
            assert synced.stale_since_unix_seconds == 0 and synced.stale_reason == ""  # no watch refused
            custom.create_cluster_custom_object(OME_GROUP, "v1beta1", "clusterbasemodels", model)
            key = pb.ObjectKey(kind="ClusterBaseModel", name=model["metadata"]["name"])
            with grpc.insecure_channel(address) as channel:
                stub = policy_pb2_grpc.PolicyServiceStub(channel)
                eventually(
                    lambda: stub.GetObjects(pb.GetObjectsRequest(keys=[key]), timeout=10).objects[0].manifest,
                    what="the new model seen through the watch",
                )
            assert status(address).stale_since_unix_seconds == 0
    finally:
        with contextlib.suppress(ApiException):
            custom.delete_cluster_custom_object(OME_GROUP, "v1beta1", "clusterbasemodels", model["metadata"]["name"])
        api.close()


# -- the controller's -------------------------------------------------------------------------------


def test_a_refusal_is_told_by_the_log_records_status_field_not_digits_anywhere_in_it() -> None:
    assert not refused({"time": 1796198491.403428, "msg": "waiting to hold the lease ome/policy-controller"})
    assert not refused({"time": 1.0, "msg": "InferenceService a/b: RuntimeReady True", "seconds": 0.403})
    assert refused({"time": 1.0, "msg": "InferenceService a/b: Kubernetes API: 403 Forbidden: no", "status": 403})
    assert not refused({"time": 1.0, "msg": "InferenceService a/b: Kubernetes API: 409 Conflict", "status": 409})


def deployments(world: World) -> list[str]:
    return [name for kind, name in world.workloads(NAMED_ISVC) if kind == "Deployment"]


def test_the_controller_does_its_whole_job_with_exactly_the_shipped_rbac_balancing_over_policyd_replicas(
    world: World,
) -> None:
    """As deployed: policyd replicas read the cluster with policyd's token, the controller acts
    with its own and dials every replica (the comma-separated form of what the headless Service's
    name resolves to); it pushes nothing, and both replicas answer its calls."""
    apply_rbac(world.api)
    kubeconfig = world.cluster.token_kubeconfig(NAMESPACE, CONTROLLER, world.tmp / "controller.kubeconfig")
    policyd = world.cluster.token_kubeconfig(NAMESPACE, POLICYD, world.tmp / "policyd.kubeconfig")
    unsupported = copy.deepcopy(named_runtime())
    unsupported["spec"]["supportedModelFormats"][0]["modelArchitecture"] = "Qwen2ForCausalLM"
    unsupported["spec"]["decoderConfig"] = copy.deepcopy(unsupported["spec"]["engineConfig"])
    world.apply(named_model())
    world.apply(unsupported)
    with_decoder = named_isvc()
    with_decoder["spec"]["decoder"] = {"minReplicas": 1, "maxReplicas": 1}
    with (
        policyd_replicas(policyd, 2) as replicas,
        running(
            world,
            "--leader-election-namespace",
            NAMESPACE,
            kubeconfig=kubeconfig,
            policyd=",".join(address for address, _ in replicas),
        ) as controller,
    ):
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
        assert controller.logged("watches the cluster itself")  # it follows: nothing pushed
        assert all(calls_served(metrics) > 0 for _, metrics in replicas), "a replica got no call"


def refused(entry: dict[str, object]) -> bool:
    """A log record of a request the API server refused (403 Forbidden): the controller gives each
    failed request's HTTP status as the record's ``status`` field (a timestamp's digits can read 403)."""
    return entry.get("status") == 403
