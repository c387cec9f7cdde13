"""The webhook's stories as users meet them: ``kubectl apply/label/delete`` against a real API
server with OME's webhook configurations registered (``url`` on 127.0.0.1, a CA of the tests' own),
policy-webhook answering them from a real policyd whose catalog a real controller keeps, kubectl's
stdout and stderr checked word for word (spec 002 "Troubleshooting", spec 004)."""

from __future__ import annotations

import contextlib
import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from controller.manifests import (
    AUTO_ISVC,
    AUTO_RUNTIME,
    NAMED_ISVC,
    NAMED_RUNTIME,
    auto_isvc,
    auto_model,
    auto_runtime,
    named_isvc,
    named_model,
    named_runtime,
)
from controller.support import Controller, World, catalog_file, eventually
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from testkit.cluster import Cluster
from testkit.shared import CATALOG, REPO, RULES, SPEC, spec_manifest

from policyd.clients.policyctl.conformance.daemons import serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc

from .cluster_support import Kubectl, closed_port, registered, registrations
from .support import running_webhook, serving_certs

NAMESPACE = "llama-demo"
DOWN_NAMESPACE = "webhook-policyd-down"  # the namespace whose webhooks ask a policyd that is down
# ClusterServingRuntimes are cluster-scoped, so a namespaceSelector does not keep the registered
# webhooks off other tests' runtimes: they see only the runtimes with this label, which every
# runtime these tests apply carries (kubectl's output does not show labels).
STORIES = ("policyd.test/webhook-stories", "true")
VALIDATOR = 'admission webhook "inferenceservice.ome-webhook-server.validator" denied the request: '
CSR_VALIDATOR = 'admission webhook "clusterservingruntime.ome-webhook-server.validator" denied the request: '
OME_CLASSES = ("AcceleratorClass", "acceleratorclasses")
VLLM_RUNTIME = "vllm-llama-3-2-1b-instruct"
RUNTIME_70B = "sglang-llama-3-3-70b"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


# --- the processes, once for the module


@dataclass
class Stack:
    world: World
    kubectl: Kubectl
    controller: Controller
    down_policyd: str  # the address the second webhook asks, where nothing answers

    def csr(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """``manifest`` with the label the registered ClusterServingRuntime webhook selects."""
        manifest = copy.deepcopy(manifest)
        manifest["metadata"].setdefault("labels", {})[STORIES[0]] = STORIES[1]
        return manifest

    def in_catalog(self, kind: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        """The object as policyd's catalog holds it (the controller synced it), or None."""
        with grpc.insecure_channel(self.world.policyd) as channel:
            key = pb.ObjectKey(kind=kind, namespace=namespace, name=name)
            reply = policy_pb2_grpc.PolicyServiceStub(channel).GetObjects(pb.GetObjectsRequest(keys=[key]))
        manifest = reply.objects[0].manifest
        return json.loads(manifest) if manifest else None

    def synced(self, kind: str, name: str, namespace: str = "", spec: dict[str, Any] | None = None) -> None:
        """Wait until policyd's catalog holds the object (with ``spec`` as given, when given)."""

        def check() -> bool:
            held = self.in_catalog(kind, name, namespace)
            return held is not None and (spec is None or held.get("spec") == spec)

        eventually(check, timeout=60, what=f"{kind} {name} in policyd's catalog")

    def gone(self, kind: str, name: str, namespace: str = "") -> None:
        eventually(lambda: self.in_catalog(kind, name, namespace) is None, timeout=60, what=f"{kind} {name} gone")

    def clean(self) -> None:
        """Every OME object the tests made, gone from the cluster and from policyd's catalog."""
        made = self._listed()
        self.world.clean()
        custom = self.world.custom
        classes: Any = custom.list_cluster_custom_object("ome.io", "v1beta1", OME_CLASSES[1])
        for item in classes["items"]:
            custom.delete_cluster_custom_object("ome.io", "v1beta1", OME_CLASSES[1], item["metadata"]["name"])
        for key in made:
            self.gone(*key)

    def _listed(self) -> list[tuple[str, str, str]]:
        custom = self.world.custom
        keys = []
        for kind, plural in (
            ("ClusterServingRuntime", "clusterservingruntimes"),
            ("ClusterBaseModel", "clusterbasemodels"),
            ("AcceleratorClass", "acceleratorclasses"),
        ):
            listed: Any = custom.list_cluster_custom_object("ome.io", "v1beta1", plural)
            keys += [(kind, item["metadata"]["name"], "") for item in listed["items"]]
        for kind, plural in (("ServingRuntime", "servingruntimes"), ("BaseModel", "basemodels")):
            listed = custom.list_namespaced_custom_object("ome.io", "v1beta1", NAMESPACE, plural)
            keys += [(kind, item["metadata"]["name"], NAMESPACE) for item in listed["items"]]
        return keys


@pytest.fixture(scope="module")
def stack(kube_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("webhook-stories")
    certs = serving_certs(tmp / "certs")
    probe, nothing = closed_port(), closed_port()  # the probes' port; the policyd that is down
    down_policyd = f"127.0.0.1:{nothing.getsockname()[1]}"
    with contextlib.ExitStack() as stack:
        stack.callback(probe.close)
        stack.callback(nothing.close)
        policyd = stack.enter_context(
            serving("policyd.daemon.main", ["--rules", str(RULES), "--log-level", "warning"], "127.0.0.1:0")
        )
        renderer = stack.enter_context(serving("policyd.clients.renderer.main", [], "unix:{tmp}/render.sock"))
        world = World(kube_cluster, policyd, renderer, namespace=NAMESPACE, tmp=tmp)
        with contextlib.suppress(ApiException):
            world.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=DOWN_NAMESPACE)))
        controller = world.start_controller()
        stack.callback(controller.stop)
        eventually(lambda: controller.logged("the lease"), what="policy-controller up")
        webhooks = {}
        for name, asks in (("stories", policyd), ("down", down_policyd)):
            started = running_webhook(asks, certs.cert_dir, kubeconfig=kube_cluster.kubeconfig, log_level="warning")
            webhooks[name] = stack.enter_context(started).url
        ca, port = certs.ca.read_bytes(), probe.getsockname()[1]
        stories = registrations(webhooks["stories"], ca, "stories", [NAMESPACE], STORIES, port)
        down = registrations(webhooks["down"], ca, "down", [DOWN_NAMESPACE], (STORIES[0], "down"), port)
        ready = Stack(world, Kubectl(kube_cluster.kubeconfig, tmp / "kubectl"), controller, down_policyd)
        stack.callback(ready.clean)  # runs after the configurations are gone (callbacks run last first)
        stack.enter_context(registered(world.api, stories, "stories", "default"))
        stack.enter_context(registered(world.api, down, "down", "default"))
        yield ready


@pytest.fixture
def stories(stack: Stack) -> Iterator[Stack]:
    """The module's processes; every OME object a test made is gone after it, from the cluster and
    from policyd's catalog (the next test's webhook must not see it)."""
    try:
        yield stack
    finally:
        stack.clean()


# --- manifests


def spec_output(page: str, command: str, after: str = "") -> str:
    """What spec ``page`` shows ``command`` printing (its first run after the text ``after``), as
    kubectl prints it: an ``output`` block after a ``bash`` one, or the lines after the command."""
    (path,) = SPEC.glob(f"{page}_*.txt")
    text = path.read_text()
    text = text[text.index(after) :]
    fenced = re.search(rf"```bash\n{re.escape(command)}\n```\s*```output\n(.*?)```", text, re.DOTALL)
    plain = re.search(rf"^{re.escape(command)}\n\n(.*?\n)\n", text, re.DOTALL | re.MULTILINE)
    found = fenced or plain
    assert found, f"{path.name} shows no output of {command!r} after {after!r}"
    return found.group(1)


def accelerator_class(name: str, product: str) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "AcceleratorClass",
        "metadata": {"name": name},
        "spec": {
            "vendor": "nvidia",
            "capabilities": {"memoryGB": "80Gi"},
            "discovery": {"nodeSelector": {"nvidia.com/gpu.product": product}},
        },
    }


def kube_denied(file: str, message: str, webhook: str = VALIDATOR, verb: str = "creating") -> str:
    """What kubectl apply prints on stderr when a webhook denies an object of ``file``."""
    return f'Error from server (Forbidden): error when {verb} "{file}": {webhook}{message}\n'


def patch_denied(file: str, applied: dict[str, Any], change: dict[str, Any], message: str) -> str:
    """What kubectl apply prints on stderr when a webhook denies the patch it sends for an
    InferenceService it applied before: the patch (the new last-applied configuration and
    ``change``), the object, then the denial."""
    meta = applied["metadata"]
    last = {**applied, "metadata": {"annotations": {}, **meta}}
    annotation = {LAST_APPLIED: json.dumps(last, sort_keys=True, separators=(",", ":")) + "\n"}
    patch = json.dumps({"metadata": {"annotations": annotation}, **change}, sort_keys=True, separators=(",", ":"))
    return (
        f"Error from server (Forbidden): error when applying patch:\n{patch}\nto:\n"
        'Resource: "ome.io/v1beta1, Resource=inferenceservices", '
        'GroupVersionKind: "ome.io/v1beta1, Kind=InferenceService"\n'
        f'Name: "{meta["name"]}", Namespace: "{meta["namespace"]}"\n'
        f'for: "{file}": error when patching "{file}": {VALIDATOR}{message}\n'
    )


# --- spec 002: reference a runtime explicitly


def test_spec_002_a_runtime_applied_in_the_same_kubectl_apply_just_before_the_inference_service_is_seen(
    stories: Stack,
) -> None:
    ran = stories.kubectl.apply("isvc.yaml", named_model(), stories.csr(named_runtime()), named_isvc())
    assert ran.output == (
        0,
        "clusterbasemodel.ome.io/llama-3-2-1b-instruct created\n"
        "clusterservingruntime.ome.io/srt-llama-3-2-1b-instruct created\n"
        + spec_output("002", "kubectl apply -f isvc.yaml"),
        "",
    )


def test_spec_002_the_webhook_rejects_an_inference_service_whose_runtime_does_not_exist(stories: Stack) -> None:
    stories.world.apply(named_model())
    ran = stories.kubectl.apply("isvc.yaml", named_isvc())
    message = f"{NAMED_RUNTIME} not found in namespace {NAMESPACE}"
    assert ran.output == (1, "", kube_denied("isvc.yaml", message))
    assert stories.kubectl("get", "inferenceservice", NAMED_ISVC, "-n", NAMESPACE).code == 1


def test_spec_002_the_webhook_rejects_an_inference_service_whose_runtime_is_disabled(stories: Stack) -> None:
    stories.world.apply(named_model())
    disabled = stories.csr(named_runtime())
    disabled["spec"]["disabled"] = True
    stories.world.apply(disabled)
    ran = stories.kubectl.apply("isvc.yaml", named_isvc())
    assert ran.output == (1, "", kube_denied("isvc.yaml", f"cluster-scoped runtime {NAMED_RUNTIME} is disabled"))


def test_spec_002_the_webhook_rejects_an_inference_service_whose_model_is_disabled(stories: Stack) -> None:
    model = named_model()
    model["spec"]["disabled"] = True
    stories.world.apply(model)
    stories.world.apply(stories.csr(named_runtime()))
    ran = stories.kubectl.apply("isvc.yaml", named_isvc())
    assert ran.output == (1, "", kube_denied("isvc.yaml", f"model {NAMED_ISVC} is disabled"))


def test_spec_002_the_webhook_rejects_a_sharded_model_no_model_cache_provider_is_configured(stories: Stack) -> None:
    model = named_model()
    model["spec"]["distribution"] = "Sharded"
    stories.world.apply(model)
    stories.world.apply(stories.csr(named_runtime()))
    ran = stories.kubectl.apply("isvc.yaml", named_isvc())
    message = (
        f"model {NAMED_ISVC} sets distribution Sharded: no model cache provider is configured for sharded model loading"
    )
    assert ran.output == (1, "", kube_denied("isvc.yaml", message))


def test_spec_002_kubectl_prints_a_does_not_declare_support_warning_and_creates_the_inference_service(
    stories: Stack,
) -> None:
    model = named_model()  # the model's config.json had "transformers_version": "4.46.0"
    model["spec"]["modelFramework"]["version"] = "4.46.0"
    stories.world.apply(model)
    stories.world.apply(stories.csr(named_runtime()))
    ran = stories.kubectl.apply("isvc.yaml", named_isvc())
    warning, created = spec_output(
        "002", "kubectl apply -f isvc.yaml", "kubectl prints a `does not declare support` warning"
    ).splitlines(True)
    assert ran.output == (0, created, warning)


def _serving_then_runtime_gone(stories: Stack) -> None:
    """The spec's InferenceService resolved to its runtime, then the runtime deleted with kubectl
    and the controller's RuntimeNotFound on it (so policyd's catalog has seen the deletion)."""
    stories.world.apply(named_model())
    stories.world.apply(stories.csr(named_runtime()))
    assert stories.kubectl.apply("isvc.yaml", named_isvc()).code == 0
    eventually(
        lambda: (c := stories.world.runtime_ready(NAMED_ISVC)) and c["reason"] == "RuntimeResolved",
        timeout=60,
        what="RuntimeResolved",
    )
    ran = stories.kubectl("delete", "clusterservingruntime", NAMED_RUNTIME)
    assert ran.output == (0, f'clusterservingruntime.ome.io "{NAMED_RUNTIME}" deleted\n', "")
    condition: Any = eventually(
        lambda: (c := stories.world.runtime_ready(NAMED_ISVC)) and c["reason"] == "RuntimeNotFound" and c,
        timeout=60,
        what="RuntimeReady False, RuntimeNotFound",
    )
    assert (condition["status"], condition["message"]) == (
        "False",
        f"runtime {NAMED_RUNTIME} not found in namespace {NAMESPACE} or at cluster scope",
    )
    stories.gone("ClusterServingRuntime", NAMED_RUNTIME)


def test_with_the_runtime_gone_the_webhook_rejects_every_update_even_a_label_change_and_never_a_delete(
    stories: Stack,
) -> None:
    _serving_then_runtime_gone(stories)
    message = f"{NAMED_RUNTIME} not found in namespace {NAMESPACE}"
    ran = stories.kubectl("label", "inferenceservice", NAMED_ISVC, "-n", NAMESPACE, "team=a")
    assert ran.output == (1, "", f"Error from server (Forbidden): {VALIDATOR}{message}\n")
    scaled = named_isvc()
    scaled["spec"]["engine"]["maxReplicas"] = 2
    ran = stories.kubectl.apply("isvc.yaml", scaled)
    assert ran.output == (1, "", patch_denied("isvc.yaml", scaled, {"spec": {"engine": {"maxReplicas": 2}}}, message))
    ran = stories.kubectl("delete", "inferenceservice", NAMED_ISVC, "-n", NAMESPACE)
    assert ran.output == (0, spec_output("002", f"kubectl delete inferenceservice {NAMED_ISVC} -n {NAMESPACE}"), "")


def test_with_the_runtime_gone_an_update_that_names_a_runtime_that_exists_is_admitted(stories: Stack) -> None:
    _serving_then_runtime_gone(stories)
    assert (
        stories.kubectl.apply(
            "runtime.yaml", stories.csr(catalog_file("runtimes/vllm/llama-3-2-1b-instruct-rt.yaml"))
        ).code
        == 0
    )
    moved = named_isvc()
    moved["spec"]["runtime"]["name"] = VLLM_RUNTIME
    ran = stories.kubectl.apply("isvc.yaml", moved)
    assert ran.output == (0, f"inferenceservice.ome.io/{NAMED_ISVC} configured\n", "")


# --- spec 004: serving runtimes


def test_spec_004_the_admission_webhook_tells_you_which_runtime_ome_will_choose(stories: Stack) -> None:
    stories.world.apply(auto_model())
    ran = stories.kubectl.apply("runtime.yaml", auto_runtime())
    assert ran.output == (0, spec_output("004", "kubectl apply -f runtime.yaml"), "")
    # OME chooses among the runtimes it knows: the controller's watch brings this one to policyd
    stories.synced("ServingRuntime", AUTO_RUNTIME, NAMESPACE)
    ran = stories.kubectl.apply("isvc.yaml", auto_isvc())
    warning, created = spec_output(
        "004", "kubectl apply -f isvc.yaml", "The admission webhook tells you which runtime OME will choose"
    ).splitlines(True)
    assert ran.output == (0, created, warning)
    assert warning == f"Warning: Runtime {AUTO_RUNTIME} will be auto-selected for model {AUTO_ISVC}\n"


def test_spec_004_the_webhook_rejects_the_runtimes_whose_accelerator_classes_you_havent_created(
    stories: Stack,
) -> None:
    big = stories.csr(spec_manifest("004", "ClusterServingRuntime", RUNTIME_70B))
    small = stories.csr(catalog_file("runtimes/srt/meta/llama-3-2-3b-instruct-rt.yaml"))
    ran = stories.kubectl.apply("runtimes.yaml", big, small)
    unknown = "unknown accelerator classes referenced in AcceleratorRequirements: "
    assert ran.output == (
        1,
        "clusterservingruntime.ome.io/srt-llama-3-2-3b-instruct created\n",
        kube_denied("runtimes.yaml", unknown + "[nvidia-h100 nvidia-l40s]", CSR_VALIDATOR),
    )
    # the classes are read from the cluster: one created in the same apply just before is seen
    h100, l40s = (
        accelerator_class("nvidia-h100", "NVIDIA-H100-80GB-HBM3"),
        accelerator_class("nvidia-l40s", "NVIDIA-L40S"),
    )
    ran = stories.kubectl.apply("runtime-70b.yaml", h100, big)
    assert ran.output == (
        1,
        "acceleratorclass.ome.io/nvidia-h100 created\n",
        kube_denied("runtime-70b.yaml", unknown + "[nvidia-l40s]", CSR_VALIDATOR),
    )
    ran = stories.kubectl.apply("runtime-70b.yaml", l40s, big)
    assert ran.output == (
        0,
        f"acceleratorclass.ome.io/nvidia-l40s created\n{spec_output('004', 'kubectl apply -f runtime-70b.yaml')}",
        "",
    )


def test_the_webhook_rejects_a_runtime_assigning_different_priorities_to_one_model_format(stories: Stack) -> None:
    stories.world.apply(stories.csr(named_runtime()))
    stories.synced("ClusterServingRuntime", NAMED_RUNTIME)  # OME checks only beside an existing runtime
    runtime = stories.csr(catalog_file("runtimes/vllm/llama-3-2-1b-instruct-rt.yaml"))
    (entry,) = runtime["spec"]["supportedModelFormats"]
    other = {**copy.deepcopy(entry), "modelArchitecture": "MllamaForConditionalGeneration", "priority": 2}
    entry["name"] = other["name"] = "safetensors"  # OME groups entries by their own name
    runtime["spec"]["supportedModelFormats"].append(other)
    ran = stories.kubectl.apply("runtime.yaml", runtime)
    message = (
        f"different priorities assigned for the model format safetensors under the clusterservingruntime {VLLM_RUNTIME}"
    )
    assert ran.output == (1, "", kube_denied("runtime.yaml", message, CSR_VALIDATOR))


def same_priority(first: str, second: str) -> str:
    return (
        "Warning: same priority assigned for the model format safetensors in the clusterservingruntimes"
        f" {first} and {second}\n"
    )


def test_a_runtime_with_the_same_priority_for_the_same_model_format_as_another_is_admitted_with_a_warning(
    stories: Stack,
) -> None:
    # OME's check never fires (it compares pointers): OME admits both, whichever is applied first
    grpc_120b, grpc_20b = (
        stories.csr(catalog_file(f"runtimes/srt/gpt-oss-{size}-rt.yaml")) for size in ("120b", "20b")
    )
    names = [doc["metadata"]["name"] for doc in (grpc_120b, grpc_20b)]
    assert stories.kubectl.apply("runtime.yaml", grpc_120b).code == 0
    stories.synced("ClusterServingRuntime", names[0])  # OME compares it with the runtimes it lists
    ran = stories.kubectl.apply("runtime-20b.yaml", grpc_20b)
    assert ran.output == (0, f"clusterservingruntime.ome.io/{names[1]} created\n", same_priority(*names))
    ran = stories.kubectl("delete", "clusterservingruntime", names[0])
    assert ran.code == 0
    stories.gone("ClusterServingRuntime", names[0])
    ran = stories.kubectl.apply("runtime.yaml", grpc_120b)
    assert ran.output == (0, f"clusterservingruntime.ome.io/{names[0]} created\n", same_priority(*reversed(names)))


MULTINODE_RUNTIME = "srt-llama-3-3-70b-instruct-multinode"


def test_spec_001_an_omenative_copy_of_a_multinode_runtime_is_admitted(stories: Stack) -> None:
    multinode = stories.csr(spec_manifest("001", "ClusterServingRuntime", MULTINODE_RUNTIME))
    assert stories.kubectl.apply("runtime.yaml", multinode).code == 0
    stories.synced("ClusterServingRuntime", MULTINODE_RUNTIME)
    omenative = copy.deepcopy(multinode)
    name = "srt-llama-3-3-70b-instruct-omenative"
    omenative["metadata"]["name"] = name
    omenative["spec"]["engineConfig"]["annotations"]["ome.io/deploymentMode"] = "OMENative"
    ran = stories.kubectl.apply("runtime-omenative.yaml", omenative)
    assert ran.output == (
        0,
        f"clusterservingruntime.ome.io/{name} created\n",
        same_priority(MULTINODE_RUNTIME, name),
    )


def _manifests(root: Path) -> list[dict[str, Any]]:
    """Every OME object of the YAML files under ``root``, in the order kubectl apply -f reads them
    (files by name, documents in order; a Kustomization is not an object kubectl applies with -f)."""
    docs = []
    for path in sorted(root.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith("ome.io/"):
                docs.append(doc)
    return docs


def _only_warnings(stderr: str) -> list[str]:
    lines = stderr.splitlines()
    assert all(line.startswith("Warning: ") for line in lines), stderr
    return lines


def _applied_whole(stories: Stack, file: str, docs: list[dict[str, Any]]) -> list[str]:
    """``kubectl apply`` of ``docs`` in one file: every object created or configured (a name the
    file repeats), nothing denied; the warnings kubectl printed."""
    labelled = [stories.csr(d) if d["kind"] == "ClusterServingRuntime" else d for d in docs]
    ran = stories.kubectl.apply(file, *labelled)
    assert ran.code == 0, ran.stderr
    printed = ran.stdout.splitlines()
    assert len(printed) == len(docs), ran.stdout
    for doc, out in zip(docs, printed, strict=True):
        assert out.startswith(f"{doc['kind'].lower()}.ome.io/{doc['metadata']['name']} "), (out, doc["metadata"])
    return _only_warnings(ran.stderr)


def test_spec_004_kubectl_apply_of_the_whole_ome_catalog_is_admitted_with_warnings_only(stories: Stack) -> None:
    docs = _manifests(CATALOG)
    runtimes = [d for d in docs if d["kind"] == "ClusterServingRuntime"]
    assert len({d["metadata"]["name"] for d in runtimes}) >= 200
    warnings = _applied_whole(stories, "ome-catalog.yaml", docs)
    # which same-priority pairs warn depends on what the controller has synced by each review
    assert all(w.startswith("Warning: same priority assigned for the model format ") for w in warnings), warnings


def test_the_example_catalog_with_its_accelerator_classes_is_admitted_with_warnings_only(stories: Stack) -> None:
    docs = _manifests(REPO / "examples" / "catalog")
    assert {d["metadata"]["name"] for d in docs if d["kind"] == "AcceleratorClass"} == {"nvidia-h100", "nvidia-l40s"}
    _applied_whole(stories, "catalog.yaml", docs)


def test_a_runtime_with_a_size_ome_reads_as_0_is_admitted_with_a_warning_naming_the_field(stories: Stack) -> None:
    runtime = stories.csr(named_runtime())
    runtime["spec"]["modelSizeRange"] = {"min": "2b", "max": "4B"}
    ran = stories.kubectl.apply("runtime.yaml", runtime)
    assert ran.output == (
        0,
        f"clusterservingruntime.ome.io/{NAMED_RUNTIME} created\n",
        "Warning: spec.modelSizeRange.min: '2b' is not a size OME reads; it counts as 0\n",
    )


def test_the_webhook_rejects_an_inference_service_whose_model_does_not_exist_in_ome_s_words(stories: Stack) -> None:
    isvc = named_isvc()
    isvc["spec"]["model"]["name"] = "no-such-model"
    ran = stories.kubectl.apply("isvc.yaml", isvc)
    message = (
        f'referenced model "no-such-model" not found in namespace "{NAMESPACE}": ensure a BaseModel exists in this'
        " namespace or a ClusterBaseModel exists cluster-wide with this name"
    )
    assert ran.output == (1, "", kube_denied("isvc.yaml", message))


def test_the_webhook_keeps_its_prefix_for_a_model_without_a_format(stories: Stack) -> None:
    model = auto_model()
    del model["spec"]["modelFormat"]
    stories.world.apply(model)
    ran = stories.kubectl.apply("isvc.yaml", auto_isvc())
    message = (
        f"no supporting runtime found for model {AUTO_ISVC} and engine does not have complete runner configuration:"
        " invalid model specification: modelFormat.name: model format name is required"
    )
    assert ran.output == (1, "", kube_denied("isvc.yaml", message))


def test_the_webhook_rejects_an_invalid_keda_scaling_operator(stories: Stack) -> None:
    stories.world.apply(named_model())
    stories.world.apply(stories.csr(named_runtime()))
    isvc = named_isvc()
    isvc["metadata"]["annotations"] = {"ome.io/autoscalerClass": "keda"}
    isvc["spec"]["kedaConfig"] = {"scalingOperator": "Above"}
    ran = stories.kubectl.apply("isvc.yaml", isvc)
    message = (
        'invalid KEDA scaling operator "Above", must be one of: GreaterThan, GreaterThanOrEqual, LessThan,'
        " LessThanOrEqual"
    )
    assert ran.output == (1, "", kube_denied("isvc.yaml", message))


def test_the_webhook_rejects_a_runtime_whose_scaling_policy_mode_is_not_independent(stories: Stack) -> None:
    runtime = stories.csr(named_runtime())
    runtime["spec"]["scalingPolicy"] = {"mode": "Coordinated"}
    ran = stories.kubectl.apply("runtime.yaml", runtime)
    message = (
        "ScalingModeNotImplemented: scalingPolicy mode Coordinated is not implemented; only Independent is supported"
    )
    assert ran.output == (1, "", kube_denied("runtime.yaml", message, CSR_VALIDATOR))


def test_the_webhook_rejects_an_inference_service_whose_scaling_policy_mode_is_not_independent(stories: Stack) -> None:
    stories.world.apply(named_model())
    stories.world.apply(stories.csr(named_runtime()))
    isvc = named_isvc()
    isvc["spec"]["scalingPolicy"] = {"mode": "Coordinated"}
    ran = stories.kubectl.apply("isvc.yaml", isvc)
    message = (
        "ScalingModeNotImplemented: scalingPolicy mode Coordinated is not implemented; only Independent is supported"
    )
    assert ran.output == (1, "", kube_denied("isvc.yaml", message))


@pytest.mark.parametrize("where", ["", "engineConfig", "decoderConfig", "routerConfig"])
def test_the_webhook_rejects_autoscaler_policy_ref_in_a_runtime_and_in_each_component(
    stories: Stack, where: str
) -> None:
    runtime = stories.csr(named_runtime())
    node = runtime["spec"].setdefault(where, {}) if where else runtime["spec"]
    node["autoscalerPolicyRef"] = {"name": "llama-autoscaler"}
    ran = stories.kubectl.apply("runtime.yaml", runtime)
    field = f"{where}.autoscalerPolicyRef" if where else "autoscalerPolicyRef"
    message = f"{field} is not allowed in runtime {NAMED_RUNTIME}: attach the autoscaler policy in the InferenceService"
    assert ran.output == (1, "", kube_denied("runtime.yaml", message, CSR_VALIDATOR))


def test_the_mutating_webhook_defaults_the_engine_to_1_to_3_replicas_and_the_router_to_1_to_2(stories: Stack) -> None:
    stories.world.apply(named_model())
    stories.world.apply(stories.csr(named_runtime()))
    isvc = named_isvc()
    isvc["spec"]["engine"] = {}
    isvc["spec"]["router"] = {}
    assert stories.kubectl.apply("isvc.yaml", isvc).output == (0, f"inferenceservice.ome.io/{NAMED_ISVC} created\n", "")
    path = "{.spec.engine.minReplicas} {.spec.engine.maxReplicas} {.spec.router.minReplicas} {.spec.router.maxReplicas}"
    ran = stories.kubectl("get", "inferenceservice", NAMED_ISVC, "-n", NAMESPACE, "-o", f"jsonpath={path}")
    assert ran.output == (0, "1 3 1 2", "")


# --- policyd down


def test_with_policyd_down_the_webhook_denies_naming_the_policy_service_and_does_not_hang(stories: Stack) -> None:
    isvc = named_isvc()
    isvc["metadata"]["namespace"] = DOWN_NAMESPACE
    ran = stories.kubectl.apply("isvc.yaml", isvc)
    address = stories.down_policyd
    unanswered = (
        f"policyd at {address} did not answer: it is unavailable (not running, or not reachable from the webhook)"
    )
    defaulter = 'admission webhook "inferenceservice.ome-webhook-server.defaulter" denied the request: '
    assert ran.output == (
        1,
        "",
        f'Error from server (ServiceUnavailable): error when creating "isvc.yaml": {defaulter}{unanswered}\n',
    )
    assert ran.seconds < 10  # the configurations' timeoutSeconds: denied before the API server gives up
    assert stories.kubectl("get", "inferenceservice", NAMED_ISVC, "-n", DOWN_NAMESPACE).code == 1
    # the runtimes' webhook too (the runtimes this webhook sees carry the label's "down" value)
    runtime = named_runtime()
    runtime["metadata"]["labels"] = {STORIES[0]: "down"}
    ran = stories.kubectl.apply("runtime.yaml", runtime)
    assert ran.output == (
        1,
        "",
        f'Error from server (ServiceUnavailable): error when creating "runtime.yaml": {CSR_VALIDATOR}{unanswered}\n',
    )
