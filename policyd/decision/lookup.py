"""Find the runtime an InferenceService names (spec 002, "How OME resolves the name")."""

from __future__ import annotations

from policyd.catalog.snapshot import Catalog, Key, make_key
from policyd.errors import InvalidInput
from policyd.resources.objects import InferenceService, ServingRuntime

LOOKUPS = ("v1.3", "v1.2.2")


def check_lookup(mode: str) -> str:
    if mode and mode not in LOOKUPS:
        raise InvalidInput("lookup", f"unknown lookup {mode!r} (one of {', '.join(LOOKUPS)})")
    return mode or LOOKUPS[0]


def lookup(catalog: Catalog, isvc: InferenceService, mode: str = "v1.3") -> ServingRuntime | None:
    """v1.3: kind ClusterServingRuntime (default) looks at cluster scope, then the
    namespace; kind ServingRuntime only the namespace. v1.2.2: namespace first, then
    cluster scope, kind ignored."""
    ref = isvc.runtime
    if ref is None:
        return None
    mode = check_lookup(mode)
    in_namespace = catalog.runtime("ServingRuntime", isvc.meta.namespace, ref.name)
    at_cluster = catalog.runtime("ClusterServingRuntime", "", ref.name)
    if mode == "v1.2.2":
        return in_namespace or at_cluster
    if ref.kind == "ServingRuntime":
        return in_namespace
    return at_cluster or in_namespace


def lookup_keys(isvc: InferenceService, mode: str = "v1.3") -> list[Key]:
    """The keys ``lookup`` reads, in its order."""
    ref = isvc.runtime
    if ref is None:
        return []
    in_namespace = make_key("ServingRuntime", isvc.meta.namespace, ref.name)
    at_cluster = make_key("ClusterServingRuntime", "", ref.name)
    if check_lookup(mode) == "v1.2.2":
        return [in_namespace, at_cluster]
    return [in_namespace] if ref.kind == "ServingRuntime" else [at_cluster, in_namespace]
