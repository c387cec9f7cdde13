"""What the contract tests share: the servicer behind grpc_testing, the objects of the spec's
Llama 3.2 3B example in both forms (typed messages and manifest text), and the checks of an
INVALID_ARGUMENT answer."""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any, NamedTuple

import grpc
import grpc_testing
import yaml
from google.protobuf import struct_pb2
from google.protobuf.message import Message
from testkit.llama import MODEL_NAME as MODEL_NAME
from testkit.llama import NAMESPACE as NAMESPACE
from testkit.llama import RUNTIME_NAME as RUNTIME_NAME
from testkit.llama import llama_entry
from testkit.llama import model_manifest as model_manifest
from testkit.shared import REPO as REPO
from testkit.shared import RULES as RULES

from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb
from policyd.policy.loader import load_policy
from policyd.server.observability import DecisionLog
from policyd.server.servicer import PolicyServicer
from policyd.server.state import ServingState
from policyd.server.wire import Encoded

ROOT = REPO
SERVICE = pb.DESCRIPTOR.services_by_name["PolicyService"]
# grpc_testing's context.abort raises a bare Exception and logs it with a traceback at ERROR; every
# INVALID_ARGUMENT answer goes that way, so the log is noise here (the status and details are checked).
logging.getLogger("grpc_testing").setLevel(logging.CRITICAL)
RUNTIME_70B = "sglang-llama-3-3-70b"


def rules_revision(rules: Path = RULES) -> str:
    """The revision of a rules directory, computed without the daemon."""
    return load_policy(rules).revision


class Termination(NamedTuple):
    response: Any
    trailing_metadata: Any
    code: grpc.StatusCode
    details: str


class Harness:
    """A PolicyServicer over a ServingState of ``rules``, called through grpc_testing."""

    def __init__(self, rules: Path = RULES) -> None:
        self.state = ServingState(rules, None, lambda attempt: None)
        self.servicer = PolicyServicer(self.state, DecisionLog(None))
        self.server = grpc_testing.server_from_dictionary({SERVICE: self.servicer}, grpc_testing.strict_real_time())

    def call(self, method: str, request: Message) -> Termination:
        rpc = self.server.invoke_unary_unary(SERVICE.methods_by_name[method], (), request, None)
        response, *rest = rpc.termination()
        # an answer already encoded is what the server's Gate sends as it is: decoded as a client would
        return Termination(response.message() if isinstance(response, Encoded) else response, *rest)

    def ok(self, method: str, request: Message) -> Any:
        """The response of a call that must succeed."""
        result = self.call(method, request)
        assert result.code == grpc.StatusCode.OK, f"{method}: {result.code}: {result.details}"
        return result.response


def assert_invalid(result: Termination, field: str, *alternatives: str) -> None:
    """INVALID_ARGUMENT whose details begin with the field path it is about (``field``, or one of
    ``alternatives`` where more than one spelling of the path is right), never a traceback."""
    assert result.code == grpc.StatusCode.INVALID_ARGUMENT, (result.code, result.details)
    assert result.response is None
    assert "Traceback" not in result.details
    paths = (field, *alternatives)
    assert any(result.details.startswith(f"{p}: ") for p in paths), f"details {result.details!r} do not name {paths}"


def struct(value: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(value)
    return out


def manifest_object(doc: dict[str, Any]) -> rpb.Object:
    """A catalog object as a user would `kubectl apply` it: YAML text."""
    return rpb.Object(manifest=yaml.safe_dump(doc, sort_keys=False))


def isvc_text(doc: dict[str, Any]) -> rpb.InferenceServiceInput:
    return rpb.InferenceServiceInput(manifest=yaml.safe_dump(doc, sort_keys=False))


# -- the spec's example objects (004, "What's in a runtime"), as manifests -------------------

RUNNER: dict[str, Any] = {
    "name": "ome-container",
    "image": "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64",
    "command": ["python3", "-m", "sglang.launch_server"],
    "args": ["--host=0.0.0.0", "--port=8080", "--model-path=$(MODEL_PATH)", "--served-model-name={{.Name}}"],
    "ports": [{"containerPort": 8080, "name": "http1", "protocol": "TCP"}],
    "resources": {"requests": {"cpu": "10", "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
    "readinessProbe": {"httpGet": {"path": "/health_generate", "port": 8080}, "periodSeconds": 60},
}
TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
VOLUMES = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]


def runtime_manifest() -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ServingRuntime",
        "metadata": {"name": RUNTIME_NAME, "namespace": NAMESPACE},
        "spec": {
            "supportedModelFormats": [llama_entry(priority=1)],
            "modelSizeRange": {"min": "2B", "max": "4B"},
            "engineConfig": {
                "tolerations": copy.deepcopy(TOLERATIONS),
                "volumes": copy.deepcopy(VOLUMES),
                "runner": copy.deepcopy(RUNNER),
            },
        },
    }


def runtime_70b_manifest() -> dict[str, Any]:
    """The spec's ClusterServingRuntime for Llama 3.3 70B: not auto-selectable, 60B-75B."""
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": RUNTIME_70B},
        "spec": {
            "supportedModelFormats": [
                {
                    "modelFormat": {"name": "safetensors", "version": "1.0.0"},
                    "modelFramework": {"name": "transformers", "version": "4.47.0.dev0"},
                    "modelArchitecture": "LlamaForCausalLM",
                    "autoSelect": False,
                    "priority": 1,
                    "acceleratorConfig": {
                        "nvidia-l40s": {
                            "tensorParallelismOverride": {"tensorParallelSize": 4, "pipelineParallelSize": 2},
                            "runtimeArgsOverride": ["--mem-frac=0.85"],
                        }
                    },
                }
            ],
            "modelSizeRange": {"min": "60B", "max": "75B"},
            "acceleratorRequirements": {"acceleratorClasses": ["nvidia-h100", "nvidia-l40s"]},
            "engineConfig": {"runner": copy.deepcopy(RUNNER)},
        },
    }


def isvc_manifest(**spec: Any) -> dict[str, Any]:
    """The spec's InferenceService that leaves out spec.runtime, with ``spec`` fields on top."""
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": MODEL_NAME, "namespace": NAMESPACE},
        "spec": {
            "model": {"name": MODEL_NAME},
            "engine": {"minReplicas": 1, "maxReplicas": 1, "serviceAccountName": "llama"},
            **spec,
        },
    }


def manifest_catalog(*docs: dict[str, Any], isolated: bool = False) -> pb.RequestCatalog:
    chosen = docs or (model_manifest(), runtime_manifest(), runtime_70b_manifest())
    return pb.RequestCatalog(objects=[manifest_object(d) for d in chosen], isolated=isolated)


# -- the same objects as typed messages --------------------------------------------------------


def model_typed() -> rpb.BaseModel:
    return rpb.BaseModel(
        kind="ClusterBaseModel",
        metadata=rpb.ObjectMeta(name=MODEL_NAME),
        spec=rpb.BaseModelSpec(
            model_format=rpb.VersionedName(name="safetensors", version="1.0.0"),
            model_framework=rpb.VersionedName(name="transformers", version="4.45.0.dev0"),
            model_architecture="LlamaForCausalLM",
            model_parameter_size="3B",
            storage=rpb.Storage(
                storage_uri="hf://meta-llama/Llama-3.2-3B-Instruct", path="/raid/models/meta/llama-3-2-3b-instruct"
            ),
        ),
    )


def runtime_typed() -> rpb.ServingRuntime:
    return rpb.ServingRuntime(
        kind="ServingRuntime",
        metadata=rpb.ObjectMeta(name=RUNTIME_NAME, namespace=NAMESPACE),
        spec=rpb.ServingRuntimeSpec(
            supported_model_formats=[
                rpb.SupportedModelFormat(
                    model_format=rpb.VersionedName(name="safetensors", version="1.0.0"),
                    model_framework=rpb.VersionedName(name="transformers", version="4.45.0.dev0"),
                    model_architecture="LlamaForCausalLM",
                    auto_select=True,
                    priority=1,
                )
            ],
            model_size_range=rpb.ModelSizeRange(min="2B", max="4B"),
            engine_config=rpb.ComponentSpec(
                runner=struct(RUNNER), pod=struct({"tolerations": TOLERATIONS, "volumes": VOLUMES})
            ),
        ),
    )


def runtime_70b_typed() -> rpb.ServingRuntime:
    return rpb.ServingRuntime(
        kind="ClusterServingRuntime",
        metadata=rpb.ObjectMeta(name=RUNTIME_70B),
        spec=rpb.ServingRuntimeSpec(
            supported_model_formats=[
                rpb.SupportedModelFormat(
                    model_format=rpb.VersionedName(name="safetensors", version="1.0.0"),
                    model_framework=rpb.VersionedName(name="transformers", version="4.47.0.dev0"),
                    model_architecture="LlamaForCausalLM",
                    auto_select=False,
                    priority=1,
                    accelerator_config={
                        "nvidia-l40s": rpb.AcceleratorModelConfig(
                            tensor_parallelism_override=rpb.TensorParallelismOverride(
                                tensor_parallel_size=4, pipeline_parallel_size=2
                            ),
                            runtime_args_override=["--mem-frac=0.85"],
                        )
                    },
                )
            ],
            model_size_range=rpb.ModelSizeRange(min="60B", max="75B"),
            accelerator_requirements=rpb.AcceleratorRequirements(accelerator_classes=["nvidia-h100", "nvidia-l40s"]),
            engine_config=rpb.ComponentSpec(runner=struct(RUNNER)),
        ),
    )


def isvc_typed(
    runtime: rpb.RuntimeRef | None = None, deployment_mode: str = "", extra: dict[str, Any] | None = None
) -> rpb.InferenceServiceInput:
    spec = rpb.InferenceServiceSpec(
        model=rpb.ModelRef(name=MODEL_NAME),
        engine=rpb.ComponentSpec(min_replicas=1, max_replicas=1, pod=struct({"serviceAccountName": "llama"})),
        deployment_mode=deployment_mode,
    )
    if runtime is not None:
        spec.runtime.CopyFrom(runtime)
    if extra:
        spec.extra.update(extra)
    return rpb.InferenceServiceInput(
        typed=rpb.InferenceService(metadata=rpb.ObjectMeta(name=MODEL_NAME, namespace=NAMESPACE), spec=spec)
    )


def typed_catalog(isolated: bool = False) -> pb.RequestCatalog:
    return pb.RequestCatalog(
        objects=[
            rpb.Object(model=model_typed()),
            rpb.Object(runtime=runtime_typed()),
            rpb.Object(runtime=runtime_70b_typed()),
        ],
        isolated=isolated,
    )
