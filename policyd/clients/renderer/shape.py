"""Checks that a merged component has the shapes the later steps rely on, so a
malformed manifest gives an error naming the field instead of a crash."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.clients.renderer.parts import PARTS
from policyd.errors import InvalidInput

_STRING_MAPS = ("labels", "annotations", "nodeSelector", "config")
_COUNTS = ("minReplicas", "maxReplicas", "scaleTarget")
_ARGV = ("command", "args")
_POD_LISTS = ("containers", "volumes")  # lists of mappings the renderer adds to or reads
_RUNNER_LISTS = ("ports", "volumeMounts")


def check_component(component: Any) -> None:
    """Raise InvalidInput (field relative to the component) for the first bad shape."""
    if not isinstance(component, Mapping):
        raise InvalidInput("", f"must be a mapping, got {_kind(component)}")
    for key in _STRING_MAPS:
        _check_string_map(component, key)
    for key in _COUNTS:
        _check_count(component, key)
    strategy = component.get("deploymentStrategy")
    if strategy is not None and not isinstance(strategy, Mapping):
        raise InvalidInput("deploymentStrategy", f"must be a mapping, got {_kind(strategy)}")
    _check_pod(component, "")
    for part in PARTS:
        holder = component.get(part)
        if holder is None:
            continue
        if not isinstance(holder, Mapping):
            raise InvalidInput(part, f"must be a mapping, got {_kind(holder)}")
        _check_count(holder, "size", part)
        _check_pod(holder, f"{part}.")


def _check_pod(holder: Mapping[str, Any], prefix: str) -> None:
    for key in _POD_LISTS:
        _check_list_of_maps(holder, key, f"{prefix}{key}")
    _check_runner(holder, f"{prefix}runner")


def _check_list_of_maps(holder: Mapping[str, Any], key: str, path: str) -> None:
    value = holder.get(key)
    if value is not None and not (isinstance(value, list) and all(isinstance(item, Mapping) for item in value)):
        raise InvalidInput(path, "must be a list of mappings")


def _check_runner(holder: Mapping[str, Any], path: str) -> None:
    runner = holder.get("runner")
    if runner is None:
        return
    if not isinstance(runner, Mapping):
        raise InvalidInput(path, f"must be a mapping (a Container), got {_kind(runner)}")
    if "name" in runner and not isinstance(runner["name"], str):
        raise InvalidInput(f"{path}.name", f"must be a string, got {_kind(runner['name'])}")
    for key in _ARGV:
        argv = runner.get(key)
        if argv is not None and not (isinstance(argv, list) and all(isinstance(t, str) for t in argv)):
            raise InvalidInput(f"{path}.{key}", "must be a list of strings")
    for key in _RUNNER_LISTS:
        _check_list_of_maps(runner, key, f"{path}.{key}")
    env = runner.get("env")
    if env is not None and not (
        isinstance(env, list) and all(isinstance(e, Mapping) and isinstance(e.get("name"), str) for e in env)
    ):
        raise InvalidInput(f"{path}.env", "must be a list of mappings, each with a string name")
    resources = runner.get("resources")
    if resources is None:
        return
    if not isinstance(resources, Mapping):
        raise InvalidInput(f"{path}.resources", f"must be a mapping, got {_kind(resources)}")
    for key in ("requests", "limits"):
        if resources.get(key) is not None and not isinstance(resources[key], Mapping):
            raise InvalidInput(f"{path}.resources.{key}", f"must be a mapping, got {_kind(resources[key])}")


def _check_string_map(holder: Mapping[str, Any], key: str) -> None:
    value = holder.get(key)
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise InvalidInput(key, f"must be a mapping, got {_kind(value)}")
    for name, item in value.items():
        if not isinstance(item, str):
            raise InvalidInput(f"{key}[{name}]", f"must be a string, got {_kind(item)}")


def _check_count(holder: Mapping[str, Any], key: str, prefix: str = "") -> None:
    value = holder.get(key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        path = f"{prefix}.{key}" if prefix else key
        raise InvalidInput(path, f"must be a whole number >= 0, got {value!r}")


def _kind(value: Any) -> str:
    return type(value).__name__
