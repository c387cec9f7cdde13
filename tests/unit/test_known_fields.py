"""The known-field schema policyd ships (policyd/resources/schema.py) against OME's CRDs: every
level it lists has exactly the fields the CRD's openAPI schema has there, so a manifest valid
for the API server gets no "unknown field" warning, and a misspelt field always does."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import pytest
import yaml
from testkit.shared import SHARED

from policyd.resources.safe_yaml import BASE_LOADER as SAFE_LOADER
from policyd.resources.schema import SCHEMAS, Fields, unknown_fields

CRDS = SHARED / "data" / "ome-crds"


@cache
def _crd_schema(kind: str) -> dict[str, Any]:
    for path in sorted(CRDS.glob("ome.io_*.yaml")):
        crd = yaml.load(path.read_text(), Loader=SAFE_LOADER)
        if crd["spec"]["names"]["kind"] == kind:
            (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta1"]
            schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
            return schema
    raise LookupError(f"no CRD for {kind} in {CRDS}")


def _levels(fields: Fields, node: Mapping[str, Any], path: str) -> Iterator[tuple[str, set[str], set[str]]]:
    """(path, the schema module's fields, the CRD's fields) for every level the module lists."""
    while node.get("type") == "array":
        node = node["items"]
    yield path, set(fields), set(node.get("properties", {}))
    for key, below in fields.items():
        if isinstance(below, Mapping) and key in node.get("properties", {}):
            yield from _levels(below, node["properties"][key], f"{path}.{key}")


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_each_listed_level_has_the_crds_fields(kind: str) -> None:
    for path, ours, crds in _levels(SCHEMAS[kind], _crd_schema(kind), ""):
        if path == ".metadata":
            continue  # the CRDs say only "type: object"; the module lists ObjectMeta's fields
        assert ours == crds, (
            f"{kind}{path or ' (top)'}: only ours {sorted(ours - crds)}, only the CRD's {sorted(crds - ours)}"
        )


def test_an_unknown_field_is_named_by_its_path_as_kubectl_does() -> None:
    runtime = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": "r", "labelz": {}},
        "spec": {
            "supportedModelFormats": [{"name": "a"}, {"modelFormat": {"name": "x", "verison": "1"}}],
            "engineConfig": {"anything": {"pod": "fields"}},
            "modle": "x",
        },
    }
    assert unknown_fields(runtime) == [
        "metadata.labelz",
        "spec.supportedModelFormats[1].modelFormat.verison",
        "spec.modle",
    ]
