"""render() never raises for malformed manifests: seeded random damage to catalog inputs
gives objects or errors, never an exception."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from policyd.clients.renderer.render import render

from .catalog import catalog_inputs

JUNK: list[Any] = [
    None, 0, -1, True, 1.5, "", "x", "{{.Labels.x}}", [], {}, [1], ["--tp", "--pp"], {"a": 1}, {"name": 1},
    [{"name": None}], [{"containerPort": []}], {"runner": 1}, {"size": "2"}, {"limits": []}, {"nvidia.com/gpu": "x"},
]  # fmt: skip
ENGINE = {
    "annotations": {"note": "x"},
    "labels": {"team": "a"},
    "runner": {
        "args": ["--tp-size=2"],
        "env": [{"name": "A", "value": "1"}],
        "resources": {"limits": {"nvidia.com/gpu": 2}},
    },
    "leader": {"runner": {"args": ["--pp", "1"]}},
    "worker": {"size": 1, "runner": {}},
}
ACCELERATOR_CONFIG = {
    "nvidia-l40s": {
        "tensorParallelismOverride": {"tensorParallelSize": 2, "pipelineParallelSize": 1},
        "runtimeArgsOverride": ["--x=1", "--y", "2"],
        "environmentOverride": {"E": "1"},
    }
}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if prefix:
        yield prefix
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from _paths(child, (*prefix, key))


def _damage(root: dict[str, Any], rng: random.Random) -> None:
    path = rng.choice(list(_paths(root)))
    holder = root
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = copy.deepcopy(rng.choice(JUNK))


def test_render_never_raises_on_malformed_manifests() -> None:
    rng = random.Random(20240601)
    inputs = [inp for _, inp in catalog_inputs()]
    for _ in range(1500):
        inp = rng.choice(inputs)
        roots: dict[str, Any] = {
            "isvc": copy.deepcopy(dict(inp.inference_service)),
            "runtime": copy.deepcopy(dict(inp.runtime)),
            "model": copy.deepcopy(dict(inp.model or {})),
            "config": copy.deepcopy(ACCELERATOR_CONFIG),
        }
        roots["isvc"]["spec"]["engine"] = copy.deepcopy(ENGINE)
        if rng.random() < 0.3:
            roots["isvc"]["spec"]["deploymentMode"] = "MultiNode"
        for _ in range(rng.randint(1, 5)):
            _damage(roots[rng.choice(list(roots))], rng)
        damaged = replace(
            inp,
            inference_service=roots["isvc"],
            runtime=roots["runtime"],
            model=roots["model"],
            accelerator_classes={"engine": "nvidia-l40s", "decoder": "nvidia-l40s"},
            accelerator_config=roots["config"],
        )
        result = render(damaged)
        assert result.objects or result.errors
