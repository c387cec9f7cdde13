"""The names kubectl users give OME's kinds: the kind itself in any case, its plural, its
resource.group form, and the short names OME's CRDs declare (``isvc``; the others declare none,
and a short name of policyctl's own would mean something else to kubectl: ``csr`` is its
CertificateSigningRequest)."""

from __future__ import annotations

from dataclasses import dataclass

from policyd.resources import kinds as ome

GROUP = ome.GROUP


@dataclass(frozen=True)
class Kind:
    name: str  # ClusterServingRuntime
    plural: str  # clusterservingruntimes
    shorts: tuple[str, ...]  # the CRD's spec.names.shortNames
    namespaced: bool

    @property
    def resource(self) -> str:
        """As kubectl prints objects of the kind: clusterservingruntime.ome.io."""
        return f"{self.name.lower()}.{GROUP}"


def _kind(kind: ome.OmeKind, *shorts: str) -> Kind:
    return Kind(kind.name, kind.plural, shorts, kind.namespaced)


INFERENCE_SERVICE = _kind(ome.INFERENCE_SERVICE, "isvc")
# the catalog also holds the InferenceServices a controller synced, and AcceleratorClasses
CATALOG_KINDS = (
    _kind(ome.CLUSTER_SERVING_RUNTIME),
    _kind(ome.SERVING_RUNTIME),
    _kind(ome.CLUSTER_BASE_MODEL),
    _kind(ome.BASE_MODEL),
    INFERENCE_SERVICE,
    _kind(ome.ACCELERATOR_CLASS),
)
_BY_NAME = {
    spelling: kind
    for kind in CATALOG_KINDS
    for spelling in (kind.name.lower(), kind.plural, *kind.shorts, kind.resource, f"{kind.plural}.{GROUP}")
}


class UnknownKind(LookupError):
    pass


def catalog_kind(text: str) -> Kind:
    """The catalog kind a user means by ``text`` (ClusterServingRuntime, csr, servingruntimes, …)."""
    kind = _BY_NAME.get(text.lower())
    if kind is None:
        known = ", ".join(k.name + "".join(f" ({short})" for short in k.shorts) for k in CATALOG_KINDS)
        raise UnknownKind(f"the server doesn't have a resource type \"{text}\" (policyd's catalog has {known})")
    return kind


def by_kind(name: str) -> Kind | None:
    """The Kind of an object's ``kind`` field, exactly as written."""
    found = _BY_NAME.get(name.lower())
    return found if found is not None and found.name == name else None


def object_name(kind: str, name: str, api_version: str = "") -> str:
    """kind.group/name as ``kubectl … -o name`` prints it (deployment.apps/x, service/x)."""
    known = by_kind(kind)
    if known is not None:
        return f"{known.resource}/{name}"
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return f"{kind.lower()}{'.' + group if group else ''}/{name}"
