"""The frozen objects the decision reads. ``raw`` keeps the whole manifest for renderers."""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from policyd.pickling import ByConstructor
from policyd.resources import kinds as ome
from policyd.resources.versions import Version

MODEL_KINDS = (ome.CLUSTER_BASE_MODEL.name, ome.BASE_MODEL.name)
RUNTIME_KINDS = (ome.CLUSTER_SERVING_RUNTIME.name, ome.SERVING_RUNTIME.name)
ISVC_KIND = ome.INFERENCE_SERVICE.name
ACCELERATOR_CLASS_KIND = ome.ACCELERATOR_CLASS.name
# the Cluster* kinds and AcceleratorClass live at cluster scope
NAMESPACED_KINDS = tuple(kind.name for kind in (ome.BASE_MODEL, ome.SERVING_RUNTIME, ome.INFERENCE_SERVICE))
PIPELINE_COMPONENTS = ("scheduler", "textEncoder", "tokenizer", "transformer", "vae")


def pack(doc: Mapping[str, Any]) -> bytes:
    """A manifest kept compressed: as parsed objects it is most of a catalog's memory (about
    20 kB a runtime, against 1 kB packed), and only renderers and GetObjects read it whole."""
    return zlib.compress(pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL), 1)


def unpack(packed: bytes) -> Mapping[str, Any]:
    value: Mapping[str, Any] = pickle.loads(zlib.decompress(packed))
    return value


@dataclass(frozen=True, slots=True)
class Meta(ByConstructor):
    name: str
    namespace: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VersionedName(ByConstructor):
    name: str
    version: str = ""
    parsed: Version | None = None  # None when unset, or set to "" (which matches no version)
    version_set: bool = False
    operator: str = "Equal"
    weight: int = 1
    weight_set: bool = False


@dataclass(frozen=True, slots=True)
class PipelineComponent(ByConstructor):
    library: str | None = None
    type: str | None = None


@dataclass(frozen=True, slots=True)
class Pipeline(ByConstructor):
    class_name: str | None = None
    components: Mapping[str, PipelineComponent] = field(default_factory=dict)
    additional: Mapping[str, PipelineComponent] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BaseModel(ByConstructor):
    kind: str
    meta: Meta
    format: VersionedName | None
    framework: VersionedName | None
    architecture: str
    quantization: str
    size: float | None
    size_text: str
    pipeline: Pipeline | None
    disabled: bool
    distribution: str
    storage_uri: str
    storage_path: str
    packed: bytes  # the whole manifest (pack)
    digest: str  # of the whole manifest: catalog revisions are built from these
    # fields OME reads otherwise than written (a size it reads as 0, a version that matches
    # none, an operator it reads as Equal), each a warning naming the field
    notes: tuple[str, ...] = ()

    @property
    def raw(self) -> Mapping[str, Any]:
        return unpack(self.packed)


@dataclass(frozen=True, slots=True)
class Entry(ByConstructor):
    """One supportedModelFormats entry."""

    index: int
    format: VersionedName
    framework: VersionedName
    architecture: str
    quantization: str
    auto_select: bool | None  # None when unset: it then neither enables auto-selection nor stops scoring
    priority: int | None
    pipeline: Pipeline | None
    accelerator_config: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SizeRange(ByConstructor):
    min_text: str
    max_text: str
    min: float
    max: float


@dataclass(frozen=True, slots=True)
class ServingRuntime(ByConstructor):
    kind: str
    meta: Meta
    entries: tuple[Entry, ...]
    size_range: SizeRange | None
    accelerator_classes: tuple[str, ...] | None
    disabled: bool
    # component name -> annotations of engineConfig/decoderConfig/routerConfig, for declared configs only
    components: Mapping[str, Mapping[str, str]]
    images: tuple[str, ...]
    autoscaler_policy_ref: str  # where it sets one (autoscalerPolicyRef, engineConfig.autoscalerPolicyRef, …), or ""
    scaling_mode: str  # spec.scalingPolicy.mode, Independent when the policy sets none, empty without a policy
    packed: bytes  # the whole manifest (pack)
    digest: str  # of the whole manifest: catalog revisions are built from these
    # of the manifest without its metadata: facts that depend on the request read only this part,
    # so runtimes of one shape (copies under other names, namespaces, labels) are judged alike
    shape: str
    notes: tuple[str, ...] = ()  # as BaseModel.notes, and a size range no size is in

    @property
    def namespaced(self) -> bool:
        return self.kind == "ServingRuntime"

    @property
    def raw(self) -> Mapping[str, Any]:
        return unpack(self.packed)


# ServingRuntime's fields read from its spec alone: equal in every runtime of one shape
SPEC_FIELDS = (
    "entries",
    "size_range",
    "accelerator_classes",
    "disabled",
    "components",
    "images",
    "autoscaler_policy_ref",
    "scaling_mode",
    "notes",
)


@dataclass(frozen=True, slots=True)
class ModelRef(ByConstructor):
    name: str
    kind: str = "ClusterBaseModel"


@dataclass(frozen=True, slots=True)
class RuntimeRef(ByConstructor):
    name: str
    kind: str = ome.CLUSTER_SERVING_RUNTIME.name
    auto_sync: bool = True
    revision: str = ""


@dataclass(frozen=True, slots=True)
class InferenceService(ByConstructor):
    meta: Meta
    model: ModelRef | None
    runtime: RuntimeRef | None
    deployment_mode: str
    # declared components (engine, decoder, router) -> their annotations
    components: Mapping[str, Mapping[str, str]]
    # every accelerator class it names, in OME's order: the ome.io/accelerator-class annotation,
    # spec.acceleratorSelector, then the engine's and the decoder's acceleratorOverride
    accelerator_classes: tuple[str, ...]
    # the accelerator class each declared engine or decoder is placed on, where one is named: its
    # acceleratorOverride's, else spec.acceleratorSelector's, else the annotation's
    placements: Mapping[str, str]
    scaling_mode: str  # as ServingRuntime.scaling_mode
    raw: Mapping[str, Any]
    digest: str = ""  # of the whole manifest, for catalog revisions (the catalog holds InferenceServices too)
    # of what decides the manifest (not its name, namespace, status or system metadata such as
    # uid and managedFields): InferenceServices that differ only there are decided alike where
    # no rule reads their names (decision/verdict_cache.py)
    shape: str = ""
    kind: str = ISVC_KIND


@dataclass(frozen=True, slots=True)
class AcceleratorClass(ByConstructor):
    """An AcceleratorClass: its name (which classes the catalog defines) and its GPU memory."""

    meta: Meta
    vendor: str
    family: str
    raw: Mapping[str, Any]
    digest: str
    memory_gib: int | None = None  # spec.capabilities.memoryGB in whole GiB, as OME reads it; None when unset
    kind: str = ACCELERATOR_CLASS_KIND
