"""Synthetic catalogs cloned from ../shared/data/ome-catalog, for the scale benchmark and the
differential test. Deterministic: the same size gives the same catalog.

Recipe. The templates are the OME catalog's ClusterServingRuntimes, by name (203). Runtime i
is template i mod 203 in generation g = i div 203:

- generation 0 is the template itself, so a catalog of 203 or more runtimes holds the OME
  catalog (200 holds its first 200 by name);
- a later generation g is a copy named ``<template>-g<g>`` with variant v = g mod 8 of its spec:
  variants 0-5 are ClusterServingRuntimes for a sibling model family (every entry's
  architecture ``X`` becomes ``XV<v>``), variants 6-7 a team's copy of the runtime itself, a
  ServingRuntime in namespace ``team-<g mod 16>``, its entries as they are; each family variant
  also sets its own modelFormat version and operator and framework version and operator, and
  each variant its own model size range and accelerator classes; variant 4 turns autoSelect off,
  variant 5 disables the runtime (the tables below).

A cluster grows by teams and model families, not by runtimes per model: a model of the OME
catalog matches its template (and, in a team's namespace, that team's copies); at most
203 x 8 runtime shapes exist whatever the size, the rest differ in name and namespace.

Models: for every template, a ClusterBaseModel that its first entry accepts (format, framework
at the entry's version, architecture, a size inside its range), the same for the sibling
families of variants 0-5, and a few that match nothing (no architecture, a quantization, a size
no range holds, another format).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from testkit.shared import CATALOG

Manifest = dict[str, Any]
VARIANTS = 8
TEAMS = 16
_CLASSES: tuple[list[str] | None, ...] = (
    None,
    ["nvidia-h100-80gb"],
    ["nvidia-a100-80gb", "nvidia-h100-80gb"],
    ["nvidia-l40s"],
    ["amd-mi300x"],
    None,
    ["nvidia-h100-80gb", "nvidia-h200"],
    None,
)
_SIZES = (None, ("1B", "10B"), ("5B", "80B"), ("30B", "800B"), None, ("100M", "4B"), ("1B", "100B"), None)
_FORMAT = ((None, None), ("1.0.0", "Equal"), ("1.0.0", "GreaterThanOrEqual"), ("1.1.0", "GreaterThanOrEqual"))
_FRAMEWORK = ((None, None), ("4.36.0", "GreaterThanOrEqual"), ("4.51.0", "GreaterThanOrEqual"), ("4.45.0", "Equal"))


@cache
def templates() -> tuple[Manifest, ...]:
    found = []
    for path in sorted(Path(CATALOG, "runtimes").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "ClusterServingRuntime":
                found.append(doc)
    return tuple(sorted(found, key=lambda d: d["metadata"]["name"]))


def _entries(spec: Manifest) -> list[Manifest]:
    return [e for e in spec.get("supportedModelFormats") or [] if isinstance(e, dict)]


def _variant(template: Manifest, g: int) -> Manifest:
    doc = copy.deepcopy(template)
    v = g % VARIANTS
    meta = doc["metadata"]
    meta["name"] = f"{meta['name']}-g{g}"
    if v >= 6:
        doc["kind"] = "ServingRuntime"
        meta["namespace"] = f"team-{g % TEAMS}"
    spec = doc["spec"]
    for entry in _entries(spec):
        if v < 6 and entry.get("modelArchitecture"):
            entry["modelArchitecture"] = f"{entry['modelArchitecture']}V{v}"
        if v >= 6:
            continue  # a team's copy serves the template's models: its entries stay
        version, operator = _FORMAT[v % len(_FORMAT)]
        if version and isinstance(entry.get("modelFormat"), dict):
            entry["modelFormat"].update(version=version, operator=operator)
        version, operator = _FRAMEWORK[(v // 2) % len(_FRAMEWORK)]
        if version and isinstance(entry.get("modelFramework"), dict):
            entry["modelFramework"].update(version=version, operator=operator)
        if v == 4:
            entry["autoSelect"] = False
    if (size := _SIZES[v]) is not None:
        spec["modelSizeRange"] = {"min": size[0], "max": size[1]}
    if (classes := _CLASSES[v]) is not None:
        spec["acceleratorRequirements"] = {"acceleratorClasses": list(classes)}
    if v == 5:
        spec["disabled"] = True
    return doc


def runtimes(n: int, first: int | None = None) -> list[Manifest]:
    """The synthetic catalog's runtimes at size ``n`` (cloned from the ``first`` templates only:
    a small catalog whose shapes repeat, for tests)."""
    base = templates()[:first]
    count = len(base)
    return [copy.deepcopy(base[i]) if i < count else _variant(base[i % count], i // count) for i in range(n)]


def _model(name: str, entry: Manifest, architecture: str, size: str) -> Manifest:
    spec: Manifest = {
        "modelFormat": {"name": entry["modelFormat"]["name"], "version": entry["modelFormat"].get("version", "1.0.0")},
        "modelFramework": dict(entry["modelFramework"]),
        "modelParameterSize": size,
        "storage": {"storageUri": f"hf://synthetic/{name}", "path": f"/models/{name}"},
    }
    spec["modelFramework"].pop("operator", None)
    spec["modelFramework"].pop("weight", None)
    if architecture:
        spec["modelArchitecture"] = architecture
    if entry.get("quantization"):
        spec["quantization"] = entry["quantization"]
    return {"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": name}, "spec": spec}


def _size_inside(spec: Manifest) -> str:
    rng = spec.get("modelSizeRange") or {}
    return str(rng.get("max") or rng.get("min") or "7B")


def models(families: int = VARIANTS - 2, limit: int | None = None, first: int | None = None) -> list[Manifest]:
    """Models for the templates (``limit`` of the ``first`` ones, spread over them), for
    ``families`` of their sibling families, and a few that match nothing."""
    base = templates()[:first]
    step = max(1, len(base) // limit) if limit else 1
    out: dict[str, Manifest] = {}
    for template in base[::step][:limit]:
        entries = _entries(template["spec"])
        if not entries or "modelFramework" not in entries[0] or "modelFormat" not in entries[0]:
            continue
        entry, name = entries[0], template["metadata"]["name"]
        arch = entry.get("modelArchitecture", "")
        size = _size_inside(template["spec"])
        out[f"m-{name}"] = _model(f"m-{name}", entry, arch, size)
        for v in range(families):
            out[f"m-{name}-v{v}"] = _model(f"m-{name}-v{v}", entry, f"{arch}V{v}" if arch else "", size)
    first = _entries(base[0]["spec"])[0]
    odd = [
        _model("m-no-architecture", first, "", "7B"),
        _model("m-huge", first, first.get("modelArchitecture", ""), "9000B"),
        _model("m-quantized", {**first, "quantization": "fp8"}, first.get("modelArchitecture", ""), "8B"),
        _model("m-gguf", {**first, "modelFormat": {"name": "gguf", "version": "1.0.0"}}, "LlamaForCausalLM", "8B"),
    ]
    return [*out.values(), *odd]


def isvc_shapes(model: str) -> Iterator[Manifest]:
    """The InferenceService shapes decided for each model: engine only; an accelerator class;
    engine and decoder asking OMENative; a team's namespace in MultiNode; no engine section;
    a scaling policy."""

    def isvc(name: str, namespace: str, spec: Manifest, annotations: dict[str, str] | None = None) -> Manifest:
        meta: Manifest = {"name": name, "namespace": namespace}
        if annotations:
            meta["annotations"] = annotations
        return {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": meta,
            "spec": {"model": {"name": model}, **spec},
        }

    yield isvc("plain", "default", {"engine": {"minReplicas": 1}})
    yield isvc("h100", "default", {"engine": {"minReplicas": 1}}, {"ome.io/accelerator-class": "nvidia-h100-80gb"})
    omenative = {"annotations": {"ome.io/deploymentMode": "OMENative"}}
    yield isvc("pd", "default", {"engine": dict(omenative), "decoder": dict(omenative)})
    yield isvc("team", "team-6", {"engine": {"minReplicas": 1}, "deploymentMode": "MultiNode"})
    yield isvc("bare", "team-7", {})
    yield isvc("scaled", "team-6", {"engine": {}, "scalingPolicy": {"mode": "Independent"}})


def write(root: Path, manifests: list[Manifest], per_file: int = 1) -> None:
    """Write manifests as YAML files under ``root`` (``per_file`` documents each)."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(0, len(manifests), per_file):
        docs = manifests[i : i + per_file]
        (root / f"{i // per_file:06d}.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
