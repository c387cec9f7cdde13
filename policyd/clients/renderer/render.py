"""The renderer's entry point: a decision in, Kubernetes objects (or errors) out.

Each component the InferenceService declares is rendered in the deployment mode policyd decided
for it (RenderInput.modes); one that policyd found cannot run in its mode gives policyd's error.
Otherwise it goes through, in order: the runtime's config (with its engine template) merged
underneath, the replica defaults, OME's labels and annotations, the model, the per-accelerator
overrides, the resources OME merges from the runtime and the chosen AcceleratorClass, and
PARALLELISM_SIZE in its runners, then its objects (workloads.py), whose engine and decoder pods
are placed by that class (placement.py). A component that fails gives one error naming it and
no object; the others still render.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policyd.clients.renderer.accelerator import apply_accelerator_config, overrides_parallelism
from policyd.clients.renderer.engines import runtime_spec
from policyd.clients.renderer.environment import router_config_env, set_model_path, set_parallelism
from policyd.clients.renderer.merge import fold_into_parts, merge_component
from policyd.clients.renderer.metadata import component_meta
from policyd.clients.renderer.model import Model, base_model
from policyd.clients.renderer.model_volume import mount_model
from policyd.clients.renderer.parts import map_runners, worker_size
from policyd.clients.renderer.placement import (
    AcceleratorClass,
    Placement,
    accelerator_classes,
    merge_resources,
    placement,
    runtime_resources,
)
from policyd.clients.renderer.scaling import with_replica_defaults
from policyd.clients.renderer.shape import check_component
from policyd.clients.renderer.workloads import MODEL_COMPONENTS, MULTI_NODE, Pods, build_objects
from policyd.errors import InvalidInput
from policyd.resources import kinds as ome
from policyd.resources.deployment_modes import COMPONENTS
from policyd.semantics.modes import EffectiveMode

RUNTIME_KINDS = (ome.SERVING_RUNTIME.name, ome.CLUSTER_SERVING_RUNTIME.name)


@dataclass(frozen=True)
class RenderInput:
    inference_service: Mapping[str, Any]  # whole InferenceService manifest
    runtime: Mapping[str, Any]  # whole (Cluster)ServingRuntime manifest
    runtime_kind: str  # "ServingRuntime" | "ClusterServingRuntime"
    model: Mapping[str, Any] | None  # whole (Cluster)BaseModel manifest; None when the isvc has no spec.model
    accelerator_classes: Mapping[str, str]  # component name -> accelerator class chosen for it (may be empty)
    accelerator_config: Mapping[str, Any] | None  # acceleratorConfig of the chosen supportedModelFormats entry
    # component name -> the mode policyd decided for it (its Effective answer)
    modes: Mapping[str, EffectiveMode] = field(default_factory=dict)
    # component name -> why policyd says it cannot run in that mode
    mode_errors: Mapping[str, str] = field(default_factory=dict)
    # whole AcceleratorClass manifests of the classes named in accelerator_classes that were found
    accelerator_class_objects: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True)
class RenderResult:
    objects: list[dict[str, Any]]
    errors: list[str]


@dataclass(frozen=True)
class _Context:
    inp: RenderInput
    runtime_name: str
    runtime_spec: Mapping[str, Any]
    model: Model | None
    classes: Mapping[str, AcceleratorClass]  # the given AcceleratorClass objects by name


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
            objects.extend(_render_component(name, context))
        except InvalidInput as error:
            errors.append(str(error.under(name)))
    return RenderResult(objects, errors)


def _render_component(name: str, context: _Context) -> list[dict[str, Any]]:
    inp = context.inp
    if inp.mode_errors.get(name):
        raise InvalidInput("", inp.mode_errors[name])
    mode = inp.modes.get(name)
    if mode is None:
        raise InvalidInput("", "no deployment mode given for it (RenderRequest.modes, from policyd's Effective)")
    isvc_component = inp.inference_service["spec"][name]
    runtime_config = context.runtime_spec.get(f"{name}Config") or {}
    if not isinstance(runtime_config, Mapping):
        raise InvalidInput(f"runtime spec.{name}Config", f"must be a mapping, got {type(runtime_config).__name__}")
    check_component(isvc_component)
    component = merge_component(runtime_config, isvc_component)
    check_component(component)
    component = with_replica_defaults(name, component)
    if mode.mode == MULTI_NODE:
        component = fold_into_parts(component)
    meta = component_meta(name, inp.inference_service, component, context.runtime_name, context.model)
    if name in MODEL_COMPONENTS:
        chosen = _chosen_class(name, context)
        component = _model_runners(name, isvc_component, component, chosen, context)
        placed: Placement | None = placement(context.runtime_spec, chosen, isvc_component, context.model is not None)
    else:
        component, placed = router_config_env(component), None
    pods = Pods(name, inp.inference_service["metadata"], context.model, placed)
    return build_objects(component, mode, meta, pods)


def _model_runners(
    name: str,
    isvc_component: Mapping[str, Any],
    component: dict[str, Any],
    chosen: AcceleratorClass | None,
    context: _Context,
) -> dict[str, Any]:
    """The engine's or decoder's runners with the model, the merged resources, the chosen
    class's overrides and PARALLELISM_SIZE, in OME's order (PARALLELISM_SIZE counts the GPUs
    the merged resources give)."""
    inp, model = context.inp, context.model
    if model is not None:
        component = set_model_path(component, model.path)
        component = map_runners(component, lambda runner: mount_model(runner, model))
    from_runtime = runtime_resources(context.runtime_spec)
    component = map_runners(component, lambda runner: merge_resources(runner, from_runtime, chosen, isvc_component))
    accelerator_class = inp.accelerator_classes.get(name)
    component = apply_accelerator_config(component, inp.accelerator_config, accelerator_class)
    return set_parallelism(
        component,
        pods_per_replica=1 + worker_size(component),
        overridden=overrides_parallelism(inp.accelerator_config, accelerator_class),
    )


def _chosen_class(name: str, context: _Context) -> AcceleratorClass | None:
    """The AcceleratorClass object of the class chosen for the component; None when none was
    chosen or its object was not given."""
    return context.classes.get(context.inp.accelerator_classes.get(name) or "")


def _context(inp: RenderInput) -> _Context:
    isvc = inp.inference_service
    metadata = _mapping(isvc.get("metadata"))
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidInput("metadata.name", "the InferenceService has no name")
    spec = isvc.get("spec")
    if not isinstance(spec, Mapping):
        raise InvalidInput("spec", "the InferenceService has no spec")
    if _mapping(spec.get("model")).get("fineTunedWeights"):
        raise InvalidInput("spec.model.fineTunedWeights", "fine-tuned serving is not rendered")
    if inp.runtime_kind not in RUNTIME_KINDS:
        raise InvalidInput("runtime", f"unknown runtime kind {inp.runtime_kind!r} (one of {', '.join(RUNTIME_KINDS)})")
    runtime_metadata = _mapping(inp.runtime.get("metadata"))
    runtime_name = runtime_metadata.get("name")
    if not isinstance(runtime_name, str) or not runtime_name or not isinstance(inp.runtime.get("spec"), Mapping):
        raise InvalidInput("runtime", "the runtime manifest needs metadata.name and a spec")
    namespace, runtime_namespace = metadata.get("namespace"), runtime_metadata.get("namespace")
    if inp.runtime_kind == "ServingRuntime" and runtime_namespace and namespace and runtime_namespace != namespace:
        raise InvalidInput(
            "runtime",
            f"ServingRuntime {runtime_name} is in namespace {runtime_namespace} and serves only that namespace, "
            f"not {namespace}",
        )
    classes = accelerator_classes(inp.accelerator_class_objects)
    return _Context(inp, runtime_name, runtime_spec(inp.runtime), base_model(spec, inp.model), classes)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
