"""Merging a runtime's engineConfig / decoderConfig / routerConfig with the InferenceService's
engine / decoder / router: where both set a value, the InferenceService's wins.

- Maps merge by key: labels, annotations, nodeSelector, the runner's resources.requests and
  resources.limits.
- Lists merge item by item: env and volumes by name, ports by containerPort, volumeMounts by
  mountPath. An item whose key both sides hold is replaced whole, so the result never mixes two
  sources of one volume or one env var (``value`` with ``valueFrom``).
- Everything else, args, command and tolerations included, is replaced whole.
- The runner (and each leader's and worker's) is one container: the InferenceService's merges
  into the runtime's whatever its name, and a name it sets is a single value like the image.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from clients.renderer.parts import DEFAULT_RUNNER_NAME, PARTS, pod_fields

Merger = Callable[[Any, Any], Any]


def merge_config(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """A component (or leader, or worker) config with ``over`` on top of ``base``. Shares
    nothing with its inputs. A null in ``over`` counts as unset."""
    return _merge_fields(base, over, _CONFIG_RULES)


def merge_component(runtime_config: Mapping[str, Any] | None, isvc_component: Mapping[str, Any]) -> dict[str, Any]:
    """The InferenceService's component with the runtime's config for it underneath; every
    runner without a name gets OME's default name."""
    merged = merge_config(runtime_config or {}, isvc_component)
    _name_runner(merged)
    for part in PARTS:
        if isinstance(merged.get(part), dict):
            _name_runner(merged[part])
    return merged


def merge_container(container: Mapping[str, Any], runner: Mapping[str, Any]) -> dict[str, Any]:
    """A pod's container of the runner's name with the runner merged on top, by the runner's rules."""
    return _merge_fields(container, runner, _RUNNER_RULES)


def fold_into_parts(component: Mapping[str, Any]) -> dict[str, Any]:
    """A multi-node component whose own PodSpec fields and runner are merged underneath its
    leader and its worker (theirs winning), so each part describes its whole pod. A component
    without a leader leads with its own pod, as OME's does."""
    base = {**pod_fields(component), **({"runner": component["runner"]} if "runner" in component else {})}
    out = {key: value for key, value in component.items() if key not in base}
    out["leader"] = merge_config(base, component.get("leader") or {})
    if isinstance(component.get("worker"), Mapping):
        out["worker"] = merge_config(base, component["worker"])
    return out


def _name_runner(config: dict[str, Any]) -> None:
    runner = config.get("runner")
    if isinstance(runner, dict) and not runner.get("name"):
        runner["name"] = DEFAULT_RUNNER_NAME


_SCALARS = (str, int, float, bool, type(None))


def _copy(value: Any) -> Any:
    """A deep copy of a manifest value; manifests are JSON, which copies far faster by hand than
    by copy.deepcopy (kept for anything else)."""
    kind = type(value)
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    return value if kind in _SCALARS else copy.deepcopy(value)


def _merge_fields(base: Mapping[str, Any], over: Mapping[str, Any], rules: Mapping[str, Merger]) -> dict[str, Any]:
    out = {key: _copy(value) for key, value in base.items()}
    for key, value in over.items():
        if value is None:
            continue
        rule = rules.get(key)
        out[key] = rule(out[key], value) if rule and out.get(key) is not None else _copy(value)
    return out


def _merge_map(base: Any, over: Any) -> Any:
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        return {**base, **_copy(dict(over))}
    return _copy(over)


def _keyed(key: str) -> Merger:
    def key_of(item: Any) -> str | int | None:
        value = item.get(key) if isinstance(item, Mapping) else None
        return value if isinstance(value, str | int) else None

    def merge(base: Any, over: Any) -> Any:
        if not (isinstance(base, list) and isinstance(over, list)):
            return _copy(over)
        out = list(base)
        where = {key_of(item): i for i, item in enumerate(out) if key_of(item) is not None}
        for item in over:
            found = where.get(key_of(item))
            if found is None:
                if key_of(item) is not None:
                    where[key_of(item)] = len(out)
                out.append(_copy(item))
            else:
                out[found] = _copy(item)
        return out

    return merge


def _with_rules(rules: Mapping[str, Merger]) -> Merger:
    def merge(base: Any, over: Any) -> Any:
        if isinstance(base, Mapping) and isinstance(over, Mapping):
            return _merge_fields(base, over, rules)
        return _copy(over)

    return merge


_RESOURCES_RULES: dict[str, Merger] = {"requests": _merge_map, "limits": _merge_map}
_RUNNER_RULES: dict[str, Merger] = {
    "env": _keyed("name"),
    "ports": _keyed("containerPort"),
    "volumeMounts": _keyed("mountPath"),
    "resources": _with_rules(_RESOURCES_RULES),
}
_CONFIG_RULES: dict[str, Merger] = {
    "labels": _merge_map,
    "annotations": _merge_map,
    "nodeSelector": _merge_map,
    "volumes": _keyed("name"),
    "runner": _with_rules(_RUNNER_RULES),
}
# Leaders and workers merge by the same rules as the component that holds them.
_CONFIG_RULES.update({part: _with_rules(_CONFIG_RULES) for part in PARTS})
