"""The renderer's entry point: a decision in, Kubernetes objects (or errors) out.

Each component the InferenceService declares goes through, in order: merge with the
runtime's config, placeholders, per-accelerator overrides, environment, workload. A component
that fails gives one error naming it and no object; the others still render.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clients.renderer.accelerator import apply_accelerator_config, overrides_parallelism
from clients.renderer.environment import apply_environment
from clients.renderer.merge import fold_into_parts, merge_component
from clients.renderer.parts import pods_per_replica
from clients.renderer.placeholders import fill_placeholders
from clients.renderer.shape import check_component
from clients.renderer.workloads import MULTI_NODE, Owner, build_workload, check_multi_node, check_runnable
from policyd.errors import InvalidInput
from policyd.semantics.modes import COMPONENTS, check_mode, effective_mode

RUNTIME_KINDS = ("ServingRuntime", "ClusterServingRuntime")
_MODEL_COMPONENTS = ("engine", "decoder")  # the ones that get MODEL_PATH, PARALLELISM_SIZE and overrides


@dataclass(frozen=True)
class RenderInput:
    inference_service: Mapping[str, Any]  # whole InferenceService manifest
    runtime: Mapping[str, Any]  # whole (Cluster)ServingRuntime manifest
    runtime_kind: str  # "ServingRuntime" | "ClusterServingRuntime"
    model: Mapping[str, Any] | None  # whole (Cluster)BaseModel manifest; None when the isvc has no spec.model
    accelerator_classes: Mapping[str, str]  # component name -> accelerator class chosen for it (may be empty)
    accelerator_config: Mapping[str, Any] | None  # acceleratorConfig of the chosen supportedModelFormats entry


@dataclass(frozen=True)
class RenderResult:
    objects: list[dict[str, Any]]
    errors: list[str]


@dataclass(frozen=True)
class _Context:
    inp: RenderInput
    owner: Owner
    metadata: Mapping[str, Any]
    spec_mode: str
    model_path: str | None


def render(inp: RenderInput) -> RenderResult:
    """The objects for every component the InferenceService declares, in the order engine,
    decoder, router, and an error for each one that cannot be rendered. Never raises for
    malformed manifests. The result shares nothing with the input."""
    try:
        context = _context(inp)
    except InvalidInput as error:
        return RenderResult([], [str(error)])
    spec = inp.inference_service["spec"]
    declared = [name for name in COMPONENTS if spec.get(name) is not None]
    if not declared:
        return RenderResult([], ["spec: the InferenceService declares no engine, decoder or router"])
    objects: list[dict[str, Any]] = []
    errors: list[str] = []
    for name in declared:
        try:
            objects.append(_render_component(name, context))
        except InvalidInput as error:
            errors.append(str(error.under(name)))
    return RenderResult(objects, errors)


def _render_component(name: str, context: _Context) -> dict[str, Any]:
    inp = context.inp
    isvc_component = inp.inference_service["spec"][name]
    runtime_config = inp.runtime["spec"].get(f"{name}Config") or {}
    if not isinstance(runtime_config, Mapping):
        raise InvalidInput(f"runtime spec.{name}Config", f"must be a mapping, got {type(runtime_config).__name__}")
    check_component(isvc_component)
    mode = effective_mode(
        name,
        _mapping(isvc_component.get("annotations")),
        _mapping(runtime_config.get("annotations")),
        context.spec_mode,
    )
    check_runnable(name, mode)
    component = merge_component(runtime_config, isvc_component)
    check_component(component)
    multi_node = mode.mode == MULTI_NODE
    if multi_node:
        component = fold_into_parts(component)
        check_multi_node(name, component)
    component = fill_placeholders(component, context.metadata)
    if name in _MODEL_COMPONENTS:
        accelerator_class = inp.accelerator_classes.get(name)
        component = apply_accelerator_config(component, inp.accelerator_config, accelerator_class)
        component = apply_environment(
            component,
            model_path=context.model_path,
            pods_per_replica=pods_per_replica(component, multi_node),
            parallelism_overridden=overrides_parallelism(inp.accelerator_config, accelerator_class),
        )
    return build_workload(name, component, mode, context.owner)


def _context(inp: RenderInput) -> _Context:
    isvc = inp.inference_service
    metadata = _mapping(isvc.get("metadata"))
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidInput("metadata.name", "the InferenceService has no name")
    if not isinstance(isvc.get("spec"), Mapping):
        raise InvalidInput("spec", "the InferenceService has no spec")
    namespace = metadata.get("namespace") or None
    spec_mode = check_mode(str(isvc["spec"].get("deploymentMode") or ""), "spec.deploymentMode")
    if inp.runtime_kind not in RUNTIME_KINDS:
        raise InvalidInput("runtime", f"unknown runtime kind {inp.runtime_kind!r} (one of {', '.join(RUNTIME_KINDS)})")
    runtime_metadata = _mapping(inp.runtime.get("metadata"))
    runtime_name = runtime_metadata.get("name")
    if not isinstance(runtime_name, str) or not runtime_name or not isinstance(inp.runtime.get("spec"), Mapping):
        raise InvalidInput("runtime", "the runtime manifest needs metadata.name and a spec")
    runtime_namespace = runtime_metadata.get("namespace")
    if inp.runtime_kind == "ServingRuntime" and runtime_namespace and namespace and runtime_namespace != namespace:
        raise InvalidInput(
            "runtime",
            f"ServingRuntime {runtime_name} is in namespace {runtime_namespace} and serves only that namespace, "
            f"not {namespace}",
        )
    return _Context(inp, Owner(name, namespace, runtime_name), metadata, spec_mode, _model_path(inp))


def _model_path(inp: RenderInput) -> str | None:
    """The base model's storage path; None when the InferenceService names no base model."""
    if not inp.inference_service["spec"].get("model"):
        return None
    if inp.model is None:
        raise InvalidInput("spec.model", "the InferenceService names a base model but none was given to render")
    storage = _mapping(_mapping(inp.model.get("spec")).get("storage"))
    path = storage.get("path")
    if not isinstance(path, str) or not path:
        model_name = _mapping(inp.model.get("metadata")).get("name")
        raise InvalidInput("spec.model", f"base model {model_name} has no spec.storage.path for MODEL_PATH")
    return path


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
