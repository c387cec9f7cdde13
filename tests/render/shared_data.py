"""The shared data beside the repository: spec pages, the OME catalog, the LWS CRD and the
conformance cases. Read in place, never copied."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
SPEC = SHARED / "spec"
CATALOG = SHARED / "data" / "ome-catalog"
LWS_CRD = SHARED / "data" / "lws" / "leaderworkerset.x-k8s.io_leaderworkersets.v0.10.0.yaml"
RENDER_CASES = SHARED / "conformance" / "cases" / "render"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader reads the catalog several times faster


def spec_manifest(page: str, kind: str, name: str) -> dict[str, Any]:
    """A manifest printed in a spec page: a block of lines from ``apiVersion:`` to a blank line."""
    for block in re.split(r"\n\s*\n", (SPEC / page).read_text()):
        if block.startswith("apiVersion:"):
            manifest: dict[str, Any] = yaml.safe_load(block)
            if manifest["kind"] == kind and manifest["metadata"]["name"] == name:
                return manifest
    raise LookupError(f"{page} prints no {kind} {name}")


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
    """The catalog's ClusterBaseModel of that name."""
    return next(model for model in _catalog("ClusterBaseModel") if model["metadata"]["name"] == name)
