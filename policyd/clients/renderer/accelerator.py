"""Per-accelerator configuration: the ``acceleratorConfig[<class>]`` of the chosen
supportedModelFormats entry, applied after the merge to the engine's and the decoder's
runners (leaders and workers included) for the class chosen for that component.

- ``tensorParallelismOverride`` rewrites the tensor- and pipeline-parallel flags already in
  ``args`` and ``command``; it adds none.
- ``runtimeArgsOverride`` replaces flags with the same key wherever they are, and appends the
  others to ``args``.
- ``environmentOverride`` sets env vars.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from policyd.clients.renderer.envvars import set_env
from policyd.clients.renderer.flags import Flag, parse_flags, set_flag
from policyd.clients.renderer.parts import Runner, map_runners
from policyd.errors import InvalidInput

TP_FLAGS = ("--tp-size", "--tp", "--tensor-parallel-size")
PP_FLAGS = ("--pp-size", "--pp", "--pipeline-parallel-size")
_SIZES = (("tensorParallelSize", TP_FLAGS), ("pipelineParallelSize", PP_FLAGS))
_ARGV = ("command", "args")


def class_settings(accelerator_config: Mapping[str, Any] | None, accelerator_class: str | None) -> Mapping[str, Any]:
    """The settings for the chosen class; empty when no class was chosen or acceleratorConfig
    has no key spelled exactly as the class (OME ignores other keys without a warning)."""
    if not accelerator_config or not accelerator_class:
        return {}
    settings = accelerator_config.get(accelerator_class)
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise InvalidInput(f"acceleratorConfig[{accelerator_class}]", "must be a mapping")
    return settings


def overrides_parallelism(accelerator_config: Mapping[str, Any] | None, accelerator_class: str | None) -> bool:
    """Whether acceleratorConfig sets tensorParallelismOverride for the chosen class."""
    return class_settings(accelerator_config, accelerator_class).get("tensorParallelismOverride") is not None


def apply_accelerator_config(
    component: Mapping[str, Any], accelerator_config: Mapping[str, Any] | None, accelerator_class: str | None
) -> dict[str, Any]:
    """The component with the chosen class's settings applied to each of its runners."""
    settings = class_settings(accelerator_config, accelerator_class)
    try:
        flags = _parallelism_flags(settings) + _override_flags(settings)
        env = _environment(settings)
    except InvalidInput as error:
        raise error.under(f"acceleratorConfig[{accelerator_class}]") from None
    if not flags and not env:
        return dict(component)
    return map_runners(component, lambda runner: _apply(runner, flags, env))


def _apply(runner: Runner, flags: list[tuple[Flag, bool]], env: dict[str, str]) -> Runner:
    """``flags`` pairs each flag with whether to append it to args when the runner lacks it."""
    out = dict(runner)
    for flag, append in flags:
        found = False
        for key in _ARGV:
            if out.get(key):
                out[key], hit = set_flag(out[key], flag)
                found = found or hit
        if append and not found:
            out["args"] = [*(out.get("args") or []), *flag.tokens()]
    for name, value in env.items():
        out["env"] = set_env(out.get("env") or [], name, value)
    return out


def _parallelism_flags(settings: Mapping[str, Any]) -> list[tuple[Flag, bool]]:
    override = settings.get("tensorParallelismOverride")
    if override is None:
        return []
    if not isinstance(override, Mapping):
        raise InvalidInput("tensorParallelismOverride", "must be a mapping")
    flags: list[tuple[Flag, bool]] = []
    for field, keys in _SIZES:
        size = override.get(field)
        if size is None:
            continue
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidInput(f"tensorParallelismOverride.{field}", f"must be a whole number >= 1, got {size!r}")
        flags.extend((Flag(key, str(size)), False) for key in keys)
    return flags


def _override_flags(settings: Mapping[str, Any]) -> list[tuple[Flag, bool]]:
    items = settings.get("runtimeArgsOverride")
    if items is None:
        return []
    if not (isinstance(items, list) and all(isinstance(item, str) for item in items)):
        raise InvalidInput("runtimeArgsOverride", "must be a list of strings")
    try:
        return [(flag, True) for flag in parse_flags(items)]
    except InvalidInput as error:
        raise error.under("runtimeArgsOverride") from None


def _environment(settings: Mapping[str, Any]) -> dict[str, str]:
    overrides = settings.get("environmentOverride")
    if overrides is None:
        return {}
    if not isinstance(overrides, Mapping):
        raise InvalidInput("environmentOverride", "must be a mapping of names to values")
    env: dict[str, str] = {}
    for name, value in overrides.items():
        if isinstance(value, str):
            env[str(name)] = value
        elif isinstance(value, int | float):  # bool included: YAML gave a scalar; write it as text
            env[str(name)] = json.dumps(value)
        else:
            raise InvalidInput(f"environmentOverride[{name}]", f"must be a string, got {type(value).__name__}")
    return env
