"""OME's Kubernetes kinds, written once: each kind's name, plural, API group and version, and
whether its objects are namespaced. policyd, its clients and the tests read OME's kinds from here."""

from __future__ import annotations

from dataclasses import dataclass

GROUP = "ome.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"  # ome.io/v1beta1


@dataclass(frozen=True)
class OmeKind:
    name: str  # ClusterServingRuntime
    plural: str  # clusterservingruntimes
    namespaced: bool
    group: str = GROUP
    version: str = VERSION

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


CLUSTER_SERVING_RUNTIME = OmeKind("ClusterServingRuntime", "clusterservingruntimes", namespaced=False)
SERVING_RUNTIME = OmeKind("ServingRuntime", "servingruntimes", namespaced=True)
CLUSTER_BASE_MODEL = OmeKind("ClusterBaseModel", "clusterbasemodels", namespaced=False)
BASE_MODEL = OmeKind("BaseModel", "basemodels", namespaced=True)
INFERENCE_SERVICE = OmeKind("InferenceService", "inferenceservices", namespaced=True)
ACCELERATOR_CLASS = OmeKind("AcceleratorClass", "acceleratorclasses", namespaced=False)

# every kind, in this order where a list of them is shown or walked
OME_KINDS = (
    CLUSTER_SERVING_RUNTIME,
    SERVING_RUNTIME,
    CLUSTER_BASE_MODEL,
    BASE_MODEL,
    INFERENCE_SERVICE,
    ACCELERATOR_CLASS,
)
PLURALS = {kind.name: kind.plural for kind in OME_KINDS}
CLUSTER_SCOPED = frozenset(kind.name for kind in OME_KINDS if not kind.namespaced)
