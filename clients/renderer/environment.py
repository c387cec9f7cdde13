"""The two variables OME sets in the engine's and the decoder's runners.

- ``MODEL_PATH``: the base model's ``spec.storage.path``, when the InferenceService names a
  base model and the runner does not set MODEL_PATH itself.
- ``PARALLELISM_SIZE``: the GPUs in each pod times the pods in each replica, replacing any
  value set; removed for a runner without GPUs, or when acceleratorConfig sets
  tensorParallelismOverride for the chosen class.

Both go first in ``env`` when new, so the runner's own variables can refer to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clients.renderer.envvars import has_env, remove_env, set_env
from clients.renderer.parts import Runner, map_runners
from policyd.errors import InvalidInput

GPU_RESOURCE = "nvidia.com/gpu"


def apply_environment(
    component: Mapping[str, Any], *, model_path: str | None, pods_per_replica: int, parallelism_overridden: bool
) -> dict[str, Any]:
    """The component with MODEL_PATH and PARALLELISM_SIZE set in each of its runners;
    ``model_path`` is None when the InferenceService names no base model."""

    def apply(runner: Runner) -> Runner:
        env = runner.get("env") or []
        gpus = 0 if parallelism_overridden else runner_gpus(runner)
        if gpus:
            env = set_env(env, "PARALLELISM_SIZE", str(gpus * pods_per_replica), first=True)
        else:
            env = remove_env(env, "PARALLELISM_SIZE")
        if model_path is not None and not has_env(env, "MODEL_PATH"):
            env = set_env(env, "MODEL_PATH", model_path, first=True)
        return {**runner, "env": env} if env or "env" in runner else runner

    return map_runners(component, apply)


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
