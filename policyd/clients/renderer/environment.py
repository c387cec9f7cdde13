"""The variables OME sets in a component's runners.

- ``MODEL_PATH`` (engine, decoder): the base model's ``spec.storage.path``, when the
  InferenceService names a base model and the runner does not set MODEL_PATH itself.
- ``PARALLELISM_SIZE`` (engine, decoder): the GPUs in each pod times the pods in each replica,
  replacing any value set; removed for a runner without GPUs, or when acceleratorConfig sets
  tensorParallelismOverride for the chosen class.
- the router's ``config``, one variable for each key.

New variables go after the runner's own, where OME appends them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.clients.renderer.envvars import has_env, remove_env, set_env
from policyd.clients.renderer.parts import Runner, map_runners
from policyd.errors import InvalidInput

GPU_RESOURCE = "nvidia.com/gpu"


def set_model_path(component: Mapping[str, Any], model_path: str) -> dict[str, Any]:
    def apply(runner: Runner) -> Runner:
        env = runner.get("env") or []
        return runner if has_env(env, "MODEL_PATH") else {**runner, "env": set_env(env, "MODEL_PATH", model_path)}

    return map_runners(component, apply)


def set_parallelism(component: Mapping[str, Any], pods_per_replica: int, overridden: bool) -> dict[str, Any]:
    def apply(runner: Runner) -> Runner:
        env = runner.get("env") or []
        gpus = 0 if overridden else runner_gpus(runner)
        if gpus:
            env = set_env(env, "PARALLELISM_SIZE", str(gpus * pods_per_replica))
        else:
            env = remove_env(env, "PARALLELISM_SIZE")
        return {**runner, "env": env} if env or "env" in runner else runner

    return map_runners(component, apply)


def router_config_env(component: Mapping[str, Any]) -> dict[str, Any]:
    """The router with each ``config`` entry appended to its runner's env, by key."""
    config = component.get("config")
    if not config or not isinstance(component.get("runner"), Mapping):
        return dict(component)
    if not isinstance(config, Mapping):
        raise InvalidInput("config", f"must be a mapping of names to values, got {type(config).__name__}")
    runner = component["runner"]
    added = [{"name": str(key), "value": str(config[key])} for key in sorted(config)]
    return {**component, "runner": {**runner, "env": [*(runner.get("env") or []), *added]}}


def runner_gpus(runner: Mapping[str, Any]) -> int:
    """The runner's ``nvidia.com/gpu`` in its limits, else in its requests; 0 when neither."""
    resources = runner.get("resources") or {}
    for kind in ("limits", "requests"):
        value = (resources.get(kind) or {}).get(GPU_RESOURCE)
        if value is not None:
            return _whole_number(value, f"resources.{kind}[{GPU_RESOURCE}]")
    return 0


def _whole_number(value: Any, field: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    raise InvalidInput(field, f"must be a whole number of GPUs, got {value!r}")
