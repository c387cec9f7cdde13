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

The rules are a table (CONFIG_FIELDS, RUNNER_FIELDS), which ``policyctl effective`` reads too
to say what a component inherits from its runtime.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policyd.clients.renderer.parts import DEFAULT_RUNNER_NAME, PARTS, pod_fields


@dataclass(frozen=True)
class ByKey:
    """A map merged key by key."""


@dataclass(frozen=True)
class ByItem:
    """A list merged item by item, items matched by ``key`` (a string or a number)."""

    key: str


Fields = dict[str, "ByKey | ByItem | Fields"]  # the fields merged part by part; the others replaced whole

RUNNER_FIELDS: Fields = {
    "env": ByItem("name"),
    "ports": ByItem("containerPort"),
    "volumeMounts": ByItem("mountPath"),
    "resources": {"requests": ByKey(), "limits": ByKey()},
}
CONFIG_FIELDS: Fields = {
    "labels": ByKey(),
    "annotations": ByKey(),
    "nodeSelector": ByKey(),
    "volumes": ByItem("name"),
    "runner": RUNNER_FIELDS,
}
# Leaders and workers merge by the same rules as the component that holds them.
CONFIG_FIELDS.update({part: CONFIG_FIELDS for part in PARTS})


def merge_config(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """A component (or leader, or worker) config with ``over`` on top of ``base``. Shares
    nothing with its inputs. A null in ``over`` counts as unset."""
    return _merge_fields(base, over, CONFIG_FIELDS)


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
    return _merge_fields(container, runner, RUNNER_FIELDS)


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


def _merge_fields(base: Mapping[str, Any], over: Mapping[str, Any], fields: Fields) -> dict[str, Any]:
    out = {key: _copy(value) for key, value in base.items()}
    for key, value in over.items():
        if value is None:
            continue
        grain = fields.get(key)
        out[key] = _merge(out[key], value, grain) if grain is not None and out.get(key) is not None else _copy(value)
    return out


def _merge(base: Any, over: Any, grain: ByKey | ByItem | Fields) -> Any:
    """``over`` on ``base`` by the field's rule; a value of another shape than the rule expects
    replaces it whole."""
    if isinstance(grain, ByKey):
        if isinstance(base, Mapping) and isinstance(over, Mapping):
            return {**base, **_copy(dict(over))}
    elif isinstance(grain, ByItem):
        if isinstance(base, list) and isinstance(over, list):
            return _merge_items(base, over, grain.key)
    elif isinstance(base, Mapping) and isinstance(over, Mapping):
        return _merge_fields(base, over, grain)
    return _copy(over)


def item_key(item: Any, key: str) -> str | int | None:
    """An item's key as the merge matches it: a string or a number."""
    value = item.get(key) if isinstance(item, Mapping) else None
    return value if isinstance(value, str | int) else None


def _merge_items(base: list[Any], over: list[Any], key: str) -> list[Any]:
    out = list(base)
    where = {k: i for i, item in enumerate(out) if (k := item_key(item, key)) is not None}
    for item in over:
        k = item_key(item, key)
        found = where.get(k) if k is not None else None
        if found is None:
            if k is not None:
                where[k] = len(out)
            out.append(_copy(item))
        else:
            out[found] = _copy(item)
    return out
