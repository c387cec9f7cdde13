"""Validation of rendered objects against the real schemas, unknown fields refused:
Kubernetes kinds with kubernetes-validate in strict mode, the LeaderWorkerSet with the
openAPIV3Schema of its CRD, tightened, and its pod templates as Kubernetes PodTemplates."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

from .shared_data import LWS_CRD

KUBERNETES_VERSION = "1.32.0"
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")


def closed(schema: Any) -> Any:
    """A copy of an OpenAPI schema that refuses unknown fields: ``additionalProperties: false``
    wherever it lists properties, says nothing of additional ones and does not preserve
    unknown fields."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":  # field names mapped to schemas
            out[key] = {name: closed(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, Mapping):
            out[key] = closed(value)
        elif key in _SUBSCHEMA_LISTS:
            out[key] = [closed(sub) for sub in value]
        else:
            out[key] = value
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


@cache
def _lws_validator() -> jsonschema.protocols.Validator:
    crd = yaml.safe_load(LWS_CRD.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    schema = closed(version["schema"]["openAPIV3Schema"])
    validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    return validator_class(schema)


def schema_errors(obj: Mapping[str, Any]) -> list[str]:
    """Why the object is not valid; empty when it is."""
    if obj.get("kind") != "LeaderWorkerSet":
        return _kubernetes_errors(obj)
    errors = [
        f"{'.'.join(map(str, error.absolute_path))}: {error.message}" for error in _lws_validator().iter_errors(obj)
    ]
    lwt = obj.get("spec", {}).get("leaderWorkerTemplate", {})
    for key in ("leaderTemplate", "workerTemplate"):
        if key in lwt:
            pod_template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": key}, "template": lwt[key]}
            errors += [f"spec.leaderWorkerTemplate.{key}: {e}" for e in _kubernetes_errors(pod_template)]
    return errors


def _kubernetes_errors(obj: Mapping[str, Any]) -> list[str]:
    try:
        kubernetes_validate.validate(dict(obj), KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [f"{'.'.join(map(str, error.absolute_path))}: {error.message}"]
    return []
