"""The shared data beside the repository: spec pages, the OME catalog, the LWS CRD and the
conformance cases. Read in place, never copied."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import yaml
from testkit.shared import CASES as CASES
from testkit.shared import CATALOG as CATALOG
from testkit.shared import LWS_CRD as LWS_CRD
from testkit.shared import SHARED as SHARED
from testkit.shared import SPEC as SPEC
from testkit.shared import spec_manifest as spec_manifest

RENDER_CASES = CASES / "render"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader reads the catalog several times faster


@cache
def _catalog(kind: str) -> tuple[dict[str, Any], ...]:
    found = [
        doc
        for path in sorted(CATALOG.rglob("*.yaml"))
        for doc in yaml.load_all(path.read_text(), Loader=_LOADER)
        if isinstance(doc, dict) and doc.get("kind") == kind
    ]
    return tuple(sorted(found, key=lambda doc: str(doc["metadata"]["name"])))


def catalog_runtimes() -> tuple[dict[str, Any], ...]:
    """Every ClusterServingRuntime in the catalog, by name."""
    return _catalog("ClusterServingRuntime")


def catalog_model(name: str) -> dict[str, Any]:
    """The catalog's ClusterBaseModel of that name, a copy of its own (the catalog is read once)."""
    return copy.deepcopy(next(model for model in _catalog("ClusterBaseModel") if model["metadata"]["name"] == name))
