"""The spec's stories with a real API server, policyd, renderer and policy-controller."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from typing import Any

import grpc
from kubernetes import client
from testkit.synthetic import templates

from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc

from .manifests import (
    AUTO_ISVC,
    AUTO_RUNTIME,
    MULTINODE_RUNTIME,
    NAMED_ISVC,
    NAMED_RUNTIME,
    auto_isvc,
    auto_model,
    auto_runtime,
    multinode_isvc,
    multinode_model,
    multinode_runtime,
    named_isvc,
    named_model,
    named_runtime,
)
from .support import World, as_written, eventually, running

NOT_FOUND = f"runtime {NAMED_RUNTIME} not found in namespace llama-demo or at cluster scope"


def resolved(world: World, name: str) -> dict[str, object] | None:
    condition = world.runtime_ready(name)
    return condition if condition and condition["reason"] == "RuntimeResolved" else None


def test_spec_002_a_named_runtime_builds_the_engine_with_its_serving_runtime_label_and_no_advisory(
    world: World,
) -> None:
    world.apply(named_model())
    world.apply(named_runtime())
    with running(world):
        world.apply(named_isvc())
        condition = eventually(lambda: resolved(world, NAMED_ISVC), what="RuntimeReady")
        assert (condition["status"], condition["message"]) == ("True", f"ClusterServingRuntime {NAMED_RUNTIME}")
        # the rendered objects are applied one by one: wait for the one this story is about
        engine = ("Deployment", f"{NAMED_ISVC}-engine")
        deployment = eventually(lambda: world.workloads(NAMED_ISVC).get(engine), what="the engine Deployment")
        assert deployment["metadata"]["labels"]["serving-runtime"] == NAMED_RUNTIME
        assert deployment["metadata"]["labels"]["component"] == "engine"
        template = deployment["spec"]["template"]["metadata"]["labels"]
        assert (template["serving-runtime"], template["component"]) == (NAMED_RUNTIME, "engine")
        (owner,) = deployment["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("InferenceService", NAMED_ISVC, True)
        assert world.events(NAMED_ISVC, "RuntimeCompatibilityAdvisory") == []
        isvc = world.isvc(NAMED_ISVC)
        assert isvc["status"]["observedGeneration"] == isvc["metadata"]["generation"]


def test_spec_002_a_deleted_runtime_gives_runtime_not_found_and_the_workload_is_kept_until_it_is_recreated(
    world: World,
) -> None:
    world.apply(named_model())
    world.apply(named_runtime())
    with running(world):
        world.apply(named_isvc())
        eventually(lambda: resolved(world, NAMED_ISVC), what="RuntimeResolved")
        engine = ("Deployment", f"{NAMED_ISVC}-engine")
        deployment = eventually(lambda: world.workloads(NAMED_ISVC).get(engine), what="the engine Deployment")

        world.delete("ClusterServingRuntime", NAMED_RUNTIME)
        condition = eventually(
            lambda: (c := world.runtime_ready(NAMED_ISVC)) and c["reason"] == "RuntimeNotFound" and c,
            what="RuntimeNotFound",
        )
        assert (condition["status"], condition["message"]) == ("False", NOT_FOUND)
        (event,) = eventually(lambda: world.events(NAMED_ISVC, "RuntimeNotFound"))
        assert (event.type, event.message) == ("Warning", NOT_FOUND)
        # it stops updating the serving workload, but running pods keep serving
        kept = world.workloads(NAMED_ISVC)[engine]
        assert as_written(kept) == as_written(deployment)

        world.apply(named_runtime())
        condition = eventually(lambda: resolved(world, NAMED_ISVC), what="RuntimeResolved again")
        assert condition["status"] == "True"
        assert len(world.events(NAMED_ISVC, "RuntimeNotFound")) == 1


def test_runtime_ready_moves_its_last_transition_time_only_when_its_status_changes(world: World) -> None:
    world.apply(named_model())
    world.apply(named_runtime())
    with running(world):
        world.apply(named_isvc())
        first = eventually(lambda: resolved(world, NAMED_ISVC))
        changed = named_runtime()
        changed["spec"]["engineConfig"]["labels"]["logging-forward"] = "disabled"
        world.apply(changed)  # rolls out to the InferenceService that names it; RuntimeReady unchanged
        eventually(
            lambda: (
                world.workloads(NAMED_ISVC)[("Deployment", f"{NAMED_ISVC}-engine")]["metadata"]["labels"][
                    "logging-forward"
                ]
                == "disabled"
            ),
            what="the runtime's change rolled out",
        )
        assert world.runtime_ready(NAMED_ISVC) == first


def test_spec_004_an_inference_service_without_a_runtime_gets_the_auto_selected_serving_runtime(world: World) -> None:
    world.apply(auto_model())
    world.apply(auto_runtime())
    with running(world):
        world.apply(auto_isvc())
        condition = eventually(lambda: resolved(world, AUTO_ISVC), what="RuntimeResolved")
        assert condition["message"] == f"ServingRuntime {AUTO_RUNTIME}"
        engine = ("Deployment", f"{AUTO_ISVC}-engine")
        workloads = eventually(lambda: (found := world.workloads(AUTO_ISVC)) and engine in found and found)
        # the engine's objects carry the runtime's name (not the Service named after the InferenceService)
        labels = [obj["metadata"]["labels"] for obj in workloads.values()]
        assert {(x["component"], x.get("serving-runtime")) for x in labels if x["component"] == "engine"} == {
            ("engine", AUTO_RUNTIME)
        }


def test_spec_004_no_matching_runtime_is_runtime_not_found_with_omes_message(world: World) -> None:
    world.apply(auto_model())
    with running(world):
        world.apply(auto_isvc())
        condition = eventually(lambda: world.runtime_ready(AUTO_ISVC), what="RuntimeReady")
        assert (condition["status"], condition["reason"]) == ("False", "RuntimeNotFound")
        assert condition["message"].startswith("no runtime found to support model safetensors with format safetensors")
        assert world.workloads(AUTO_ISVC) == {}
        world.apply(auto_runtime())  # an InferenceService without a runtime gets one as soon as there is one
        eventually(lambda: resolved(world, AUTO_ISVC), what="RuntimeResolved")


def test_spec_001_a_multinode_runtime_is_rendered_as_a_leaderworkerset(world: World) -> None:
    world.apply(multinode_model())
    world.apply(multinode_runtime())
    with running(world):
        world.apply(multinode_isvc())
        eventually(lambda: resolved(world, "llama-3-70b"), what="RuntimeResolved")
        # OME names the LeaderWorkerSet lws-<component name>, with a Service to its leaders
        # the two are applied one after the other: wait for both
        workloads = eventually(lambda: found if len(found := world.workloads("llama-3-70b")) >= 3 else None)
        # and the Service clients reach the InferenceService by, named after it
        assert list(workloads) == [
            ("Service", "llama-3-70b"),
            ("Service", "llama-3-70b-engine"),
            ("LeaderWorkerSet", "lws-llama-3-70b-engine"),
        ]
        lws = workloads[("LeaderWorkerSet", "lws-llama-3-70b-engine")]
        assert lws["metadata"]["labels"]["serving-runtime"] == MULTINODE_RUNTIME
        assert lws["spec"]["leaderWorkerTemplate"]["size"] >= 2


def test_a_named_runtime_without_support_records_one_advisory_while_its_cause_is_unchanged(world: World) -> None:
    world.apply(named_model())
    other = copy.deepcopy(named_runtime())
    other["spec"]["supportedModelFormats"][0]["modelArchitecture"] = "Qwen2ForCausalLM"
    world.apply(other)
    with running(world):
        world.apply(named_isvc())
        (event,) = eventually(lambda: world.events(NAMED_ISVC, "RuntimeCompatibilityAdvisory"), what="the advisory")
        assert event.type == "Warning"
        assert event.message.startswith(f"Runtime {NAMED_RUNTIME} does not declare support for model {NAMED_ISVC} (")
        assert resolved(world, NAMED_ISVC)
        relabelled = named_isvc()
        relabelled["metadata"]["labels"] = {"team": "a"}
        world.apply(relabelled)  # reconciled again, same cause
        eventually(lambda: world.isvc(NAMED_ISVC)["status"]["observedGeneration"] >= 1)
        world.apply(other)
        (again,) = world.events(NAMED_ISVC, "RuntimeCompatibilityAdvisory")
        assert (again.count, again.metadata.name) == (1, event.metadata.name)


def test_a_pinned_named_runtime_records_no_advisory(world: World) -> None:
    world.apply(named_model())
    other = copy.deepcopy(named_runtime())
    other["spec"]["supportedModelFormats"][0]["modelArchitecture"] = "Qwen2ForCausalLM"
    world.apply(other)
    pinned = named_isvc()
    pinned["spec"]["runtime"]["autoSync"] = False
    with running(world):
        world.apply(pinned)
        eventually(lambda: resolved(world, NAMED_ISVC), what="RuntimeResolved")
        assert world.events(NAMED_ISVC, "RuntimeCompatibilityAdvisory") == []


def test_a_disabled_named_runtime_is_a_runtime_validation_error_and_the_workload_is_kept(world: World) -> None:
    world.apply(named_model())
    world.apply(named_runtime())
    with running(world):
        world.apply(named_isvc())
        eventually(lambda: resolved(world, NAMED_ISVC))
        # all five applied (Deployment, Service, HorizontalPodAutoscaler, PodDisruptionBudget, and the
        # Service named after the InferenceService), not the first
        before = eventually(lambda: (found := world.workloads(NAMED_ISVC)) and len(found) == 5 and found)
        disabled = named_runtime()
        disabled["spec"]["disabled"] = True
        world.apply(disabled)
        condition = eventually(
            lambda: (c := world.runtime_ready(NAMED_ISVC)) and c["status"] == "False" and c, what="RuntimeReady False"
        )
        assert condition["reason"] == "RuntimeValidationError"
        assert "is disabled" in condition["message"]
        (event,) = world.events(NAMED_ISVC, "RuntimeValidationError")
        assert event.message == condition["message"]
        assert {k: as_written(v) for k, v in world.workloads(NAMED_ISVC).items()} == {
            k: as_written(v) for k, v in before.items()
        }


def test_the_objects_of_a_component_no_longer_declared_are_deleted(world: World) -> None:
    world.apply(named_model())
    with_decoder = named_runtime()
    with_decoder["spec"]["decoderConfig"] = copy.deepcopy(with_decoder["spec"]["engineConfig"])
    world.apply(with_decoder)
    both = named_isvc()
    both["spec"]["decoder"] = {"minReplicas": 1, "maxReplicas": 1}
    with running(world):
        world.apply(both)
        eventually(lambda: ("Deployment", f"{NAMED_ISVC}-decoder") in world.workloads(NAMED_ISVC), what="decoder")
        world.apply(named_isvc())  # the user's apply drops spec.decoder
        eventually(
            lambda: ("Deployment", f"{NAMED_ISVC}-decoder") not in world.workloads(NAMED_ISVC), what="decoder deleted"
        )
        assert ("Deployment", f"{NAMED_ISVC}-engine") in world.workloads(NAMED_ISVC)


def _catalog_manifest(world: World, kind: str, name: str, namespace: str = "") -> str:
    with grpc.insecure_channel(world.policyd) as channel:
        key = pb.ObjectKey(kind=kind, namespace=namespace, name=name)
        reply = policy_pb2_grpc.PolicyServiceStub(channel).GetObjects(pb.GetObjectsRequest(keys=[key]))
        return str(reply.objects[0].manifest)


def test_policyds_catalog_holds_the_clusters_runtimes_without_the_clusters_bookkeeping(world: World) -> None:
    world.apply(auto_runtime())
    with running(world):
        stored = eventually(lambda: _catalog_manifest(world, "ServingRuntime", AUTO_RUNTIME, world.namespace))
        manifest = json.loads(stored)
        assert (manifest["metadata"]["name"], manifest["metadata"]["namespace"]) == (AUTO_RUNTIME, world.namespace)
        assert {"managedFields", "resourceVersion"}.isdisjoint(manifest["metadata"]) and "status" not in manifest


def test_a_runtime_the_webhook_would_refuse_never_enters_the_catalog(world: World) -> None:
    world.apply(named_model())
    refused = named_runtime()
    refused["spec"]["autoscalerPolicyRef"] = {"name": "hpa"}
    world.apply(refused)
    with running(world) as controller:
        world.apply(named_isvc())
        condition = eventually(lambda: world.runtime_ready(NAMED_ISVC), what="RuntimeReady")
        assert (condition["reason"], condition["message"]) == ("RuntimeNotFound", NOT_FOUND)
        assert _catalog_manifest(world, "ClusterServingRuntime", NAMED_RUNTIME) == ""
        (warning,) = controller.logged("policyd refused")
        assert warning["level"] == "warning" and NAMED_RUNTIME in warning["msg"]


def test_a_router_in_multinode_is_logged_failed_to_reconcile_component_and_records_no_event(world: World) -> None:
    world.apply(named_model())
    routed = named_runtime()
    routed["spec"]["routerConfig"] = {
        "annotations": {"ome.io/deploymentMode": "MultiNode"},
        "runner": {"name": "router", "image": "smg:v0.2.4"},
    }
    world.apply(routed)
    isvc = named_isvc()
    isvc["spec"]["router"] = {"minReplicas": 1}
    with running(world) as controller:
        world.apply(isvc)
        logged = eventually(lambda: controller.logged("Failed to reconcile component"), what="the manager's log")
        assert "invalid deployment mode for router" in json.dumps(logged[0])
        assert [name for kind, name in world.workloads(NAMED_ISVC) if kind == "Deployment"] == [f"{NAMED_ISVC}-engine"]
        assert world.events(NAMED_ISVC) == []


def test_the_accelerator_class_the_inference_service_selects_reaches_the_renderer(world: World) -> None:
    world.apply(auto_model())
    tuned = auto_runtime()
    tuned["spec"]["supportedModelFormats"][0]["acceleratorConfig"] = {
        "nvidia-l40s": {"runtimeArgsOverride": ["--mem-frac=0.85"]}
    }
    tuned["spec"]["acceleratorRequirements"] = {"acceleratorClasses": ["nvidia-l40s"]}
    world.apply(tuned)
    isvc = auto_isvc()
    isvc["spec"]["acceleratorSelector"] = {"acceleratorClass": "nvidia-l40s"}
    with running(world):
        world.apply(isvc)
        deployment = eventually(lambda: world.workloads(AUTO_ISVC).get(("Deployment", f"{AUTO_ISVC}-engine")))
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert "--mem-frac=0.85" in container.get("args", []) + container.get("command", [])


def test_a_cause_repeating_with_other_details_while_ome_s_catalog_is_applied_is_one_counted_event(
    world: World,
) -> None:
    """client-go's EventCorrelator: at most one Event an InferenceService and reason; the no-runtime
    message changes with every runtime applied ("Checked N runtimes") and updates that Event."""
    unserved = auto_model()
    unserved["spec"]["modelArchitecture"] = "NoRuntimeServesThisForCausalLM"
    world.apply(unserved)
    with running(world):
        world.apply(auto_isvc())
        eventually(lambda: world.events(AUTO_ISVC, "RuntimeNotFound"), what="the first RuntimeNotFound event")
        runtimes = {doc["metadata"]["name"]: doc for doc in templates()}  # OME's catalog, by name
        for doc in runtimes.values():
            world.apply(doc)
        checked = f"Checked {len(runtimes)} runtimes (0 namespace-scoped, {len(runtimes)} cluster-scoped)"
        eventually(lambda: checked in world.runtime_ready(AUTO_ISVC)["message"], what="every runtime checked")
        (event,) = eventually(
            lambda: [e for e in world.events(AUTO_ISVC, "RuntimeNotFound") if checked in e.message],
            what="the Event says the newest count",
        )
        assert len(world.events(AUTO_ISVC)) <= 2
        assert event.count > 1
        assert event.type == "Warning"


def drifted(world: World, name: str) -> dict[str, Any] | None:
    conditions = (world.isvc(name).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "RuntimeDrifted"), None)


def test_spec_002_a_pinned_inference_service_keeps_serving_from_its_snapshot_and_says_how_its_runtime_drifted(
    world: World,
) -> None:
    world.apply(named_model())
    world.apply(named_runtime())
    pinned = named_isvc()
    pinned["spec"]["runtime"]["autoSync"] = False
    with running(world):
        world.apply(pinned)
        eventually(lambda: resolved(world, NAMED_ISVC), what="RuntimeResolved")
        in_sync = eventually(lambda: drifted(world, NAMED_ISVC), what="RuntimeDrifted")
        assert (in_sync["status"], in_sync["reason"]) == ("False", "SourceRuntimeUnchanged")
        # the pin: a ControllerRevision the InferenceService owns, holding the runtime
        apps = client.AppsV1Api(world.api)
        uid = world.isvc(NAMED_ISVC)["metadata"]["uid"]
        revisions = apps.list_namespaced_controller_revision(world.namespace).items
        (pin,) = [r for r in revisions if r.metadata.owner_references[0].uid == uid]
        assert (pin.metadata.owner_references[0].kind, pin.revision) == ("InferenceService", 1)
        assert pin.data["metadata"]["name"] == NAMED_RUNTIME
        engine = ("Deployment", f"{NAMED_ISVC}-engine")
        deployment = eventually(lambda: world.workloads(NAMED_ISVC).get(engine), what="the engine Deployment")

        changed = named_runtime()
        changed["spec"]["engineConfig"]["runner"]["image"] = "docker.io/lmsysorg/sglang:changed"
        world.apply(changed)
        moved = eventually(
            lambda: (c := drifted(world, NAMED_ISVC)) and c["status"] == "True" and c, what="RuntimeDrifted True"
        )
        assert moved["reason"] == "SourceRuntimeChanged"
        # policyctl effective shows the pin and drift (spec 002), and with -o json both as data
        shown = policyctl_effective(world, NAMED_ISVC)
        assert "PIN     autoSync: false, the newest snapshot of the runtime" in shown
        assert f"DRIFT   True SourceRuntimeChanged: ClusterServingRuntime {NAMED_RUNTIME} changed since" in shown
        as_json = json.loads(policyctl_effective(world, NAMED_ISVC, "-o", "json"))
        assert (as_json["pin"]["autoSync"], as_json["drift"]["reason"]) == (False, "SourceRuntimeChanged")
        # a runtime change does not roll out to a pinned InferenceService
        kept = world.workloads(NAMED_ISVC)[engine]
        assert as_written(kept) == as_written(deployment)

        world.delete("ClusterServingRuntime", NAMED_RUNTIME)
        missing = eventually(
            lambda: (c := drifted(world, NAMED_ISVC)) and c["reason"] == "SourceRuntimeMissing" and c,
            what="SourceRuntimeMissing",
        )
        assert missing["status"] == "True"
        assert NAMED_RUNTIME in missing["message"] and pin.metadata.name in missing["message"]
        assert resolved(world, NAMED_ISVC), "the pin keeps serving: RuntimeReady stays True"
        kept = world.workloads(NAMED_ISVC)[engine]
        assert as_written(kept) == as_written(deployment)

        world.apply(named_runtime())  # the pin is current again
        back = eventually(
            lambda: (c := drifted(world, NAMED_ISVC)) and c["status"] == "False" and c, what="RuntimeDrifted False"
        )
        assert back["reason"] == "SourceRuntimeUnchanged"

        unknown = copy.deepcopy(pinned)
        unknown["spec"]["runtime"]["revision"] = "no-such-revision"
        world.apply(unknown)
        refused = eventually(
            lambda: (c := world.runtime_ready(NAMED_ISVC)) and c["status"] == "False" and c,
            what="RuntimeReady False for an unknown revision",
        )
        assert refused["reason"] == "RuntimeRevisionNotFound"
        assert f"(this InferenceService's revisions: {pin.metadata.name})" in refused["message"]


def policyctl_effective(world: World, name: str, *flags: str) -> str:
    command = [sys.executable, "-m", "policyd.clients.policyctl.main", "--address", world.policyd, "effective", name]
    done = subprocess.run(
        [*command, "-n", world.namespace, "--kubeconfig", str(world.cluster.kubeconfig), *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
