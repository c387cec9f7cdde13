"""The metadata OME gives every object of a component (components/base.go, engine.go): the
InferenceService's labels and annotations carried over, the component's on top, then OME's own;
and the owner reference that makes the InferenceService the objects' controller."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policyd.clients.renderer.model import Model
from policyd.resources import kinds as ome

LABEL_ISVC = "ome.io/inferenceservice"
LABEL_COMPONENT = "component"
LABEL_RUNTIME = "serving-runtime"
LABEL_APP = "app"  # the Deployment's, Service's and PodDisruptionBudget's selector
# Annotations of the InferenceService that OME does not carry over (ServiceAnnotationDisallowedList).
_NOT_CARRIED = frozenset(
    {
        "autoscaling.knative.dev/min-scale",
        "autoscaling.knative.dev/max-scale",
        "internal.ome.io/storage-initializer-sourceuri",
        "kubectl.kubernetes.io/last-applied-configuration",
    }
)
# Annotations meant for pods only, which OME leaves off Services (PodOnlyAnnotationPrefixes).
_POD_ONLY_PREFIXES = (
    "k8s.grafana.com/",
    "loki.grafana.com/",
    "prometheus.io/",
    "networking.gke.io/",
    "rdma.ome.io/",
    "ome.io/inject-model-init",
    "ome.io/inject-fine-tuned-adapter",
    "ome.io/inject-serving-sidecar",
)
_DECRYPTION_ANNOTATIONS = ("ome.io/base-model-decryption-key-name", "ome.io/base-model-decryption-secret-name")
_MODEL_CATEGORY = "models.ome.io/category"


@dataclass(frozen=True)
class ComponentMeta:
    """One component's object metadata, shared by all its objects."""

    name: str  # <isvc>-<component>
    namespace: str | None
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    owner: Mapping[str, Any]  # the ownerReference to the InferenceService

    def object(self, name: str | None = None, **overrides: Mapping[str, str]) -> dict[str, Any]:
        """The ``metadata`` of one object: this component's, with another name or other labels
        or annotations where given, and the owner reference."""
        out = self.template(**overrides)
        if name:
            out["name"] = name
        out["ownerReferences"] = [dict(self.owner)]
        return out

    def template(self, **overrides: Mapping[str, str]) -> dict[str, Any]:
        """The ``metadata`` of a pod template: OME copies the component's whole ObjectMeta into
        it, name and namespace included, but no owner reference."""
        labels = overrides.get("labels", self.labels)
        annotations = overrides.get("annotations", self.annotations)
        out: dict[str, Any] = {"name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        out["labels"] = dict(labels)
        if annotations:  # Go leaves an empty map out
            out["annotations"] = dict(annotations)
        return out


def component_meta(
    component_name: str,
    isvc: Mapping[str, Any],
    component: Mapping[str, Any],
    runtime_name: str,
    model: Model | None,
) -> ComponentMeta:
    """``component`` is the merged component, whose labels and annotations include the runtime's."""
    metadata = _mapping(isvc.get("metadata"))
    isvc_name = str(metadata["name"])
    annotations = {k: v for k, v in _strings(metadata.get("annotations")).items() if k not in _NOT_CARRIED}
    annotations.update(_strings(component.get("annotations")))
    labels = {**_strings(metadata.get("labels")), **_strings(component.get("labels"))}
    labels.update(
        {
            LABEL_ISVC: isvc_name,
            LABEL_COMPONENT: component_name,
            LABEL_RUNTIME: runtime_name,
            "fine-tuned-serving": "false",
        }
    )
    if model is not None:
        labels["base-model-name"] = model.name
        labels["base-model-size"] = model.annotations.get(_MODEL_CATEGORY, "SMALL")
        labels["base-model-type"] = "Serving"
        if model.vendor:
            labels["base-model-vendor"] = model.vendor
        annotations.update({key: model.annotations[key] for key in _DECRYPTION_ANNOTATIONS if key in model.annotations})
        annotations["ome.io/base-model-name"] = model.name
        if model.vendor:
            annotations["ome.io/base-model-vendor"] = model.vendor
        annotations["ome.io/base-model-format"] = model.format_name
        if model.format_version:
            annotations["ome.io/base-model-format-version"] = model.format_version
    annotations["ome.io/serving-runtime"] = runtime_name
    return ComponentMeta(
        name=f"{isvc_name}-{component_name}",
        namespace=metadata.get("namespace") or None,
        labels=labels,
        annotations=annotations,
        owner=owner_reference(isvc),
    )


def owner_reference(isvc: Mapping[str, Any]) -> dict[str, Any]:
    """The controller reference OME sets on every object it creates for an InferenceService. The
    uid is the InferenceService's; one not yet created (a preview) has none to give."""
    metadata = _mapping(isvc.get("metadata"))
    reference: dict[str, Any] = {
        "apiVersion": isvc.get("apiVersion") or ome.API_VERSION,
        "kind": ome.INFERENCE_SERVICE.name,
        "name": metadata.get("name"),
    }
    if metadata.get("uid"):
        reference["uid"] = metadata["uid"]
    return {**reference, "controller": True, "blockOwnerDeletion": True}


def without_pod_only(annotations: Mapping[str, str]) -> dict[str, str]:
    """The annotations fit for a Service."""
    return {k: v for k, v in annotations.items() if not k.startswith(_POD_ONLY_PREFIXES)}


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
