"""The engine's runner as it will run: the runtime's ``engineConfig`` with the
InferenceService's ``engine`` on top, by the spec's merge rules (spec 004, "Where the
runtime and the InferenceService both set a value"):

- ``command`` and ``args`` replace the runtime's whole list; single values (the image)
  replace the runtime's;
- ``env`` merges by name (an item both sides name is replaced whole);
- the runner's ``resources.requests`` and ``resources.limits`` merge by key.

A multi-node engine runs its server in the leader: the leader's runner is merged on top
of the component's own runner, as the renderer folds them.

Pure: manifests in, a frozen view out. The renderer (policyd/clients/renderer/merge.py) applies
the same rules to whole components.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_VAR = re.compile(r"\$(\$|\(([A-Za-z_][A-Za-z0-9_.-]*)\))")


@dataclass(frozen=True)
class Runner:
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    # literal values by name; None for a variable set from valueFrom (unknown until the pod runs)
    env: Mapping[str, str | None] = field(default_factory=dict)
    # resource names the runner requests or limits (nvidia.com/gpu, amd.com/gpu, ...)
    resources: frozenset[str] = frozenset()

    def expand(self, value: str) -> str:
        """``value`` with Kubernetes' ``$(NAME)`` references to literal env values filled in;
        ``$$`` is a literal ``$`` and an unknown reference stays as written."""

        def one(match: re.Match[str]) -> str:
            if match.group(1) == "$":
                return "$"
            known = self.env.get(match.group(2))
            return known if known is not None else match.group(0)

        return _VAR.sub(one, value) if "$" in value else value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _by_name(base: Any, over: Any) -> list[Any]:
    if not (isinstance(base, list) and isinstance(over, list)):
        return list(over) if isinstance(over, list) else []
    out = list(base)
    where = {item.get("name"): i for i, item in enumerate(out) if isinstance(item, Mapping)}
    for item in over:
        name = item.get("name") if isinstance(item, Mapping) else None
        if name is not None and name in where:
            out[where[name]] = item
        else:
            where[name] = len(out)
            out.append(item)
    return out


def merge_runner(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``; a null in ``over`` counts as unset."""
    out = dict(base)
    for key, value in over.items():
        if value is None:
            continue
        if key == "env" and out.get("env") is not None:
            out["env"] = _by_name(out["env"], value)
        elif key == "resources" and isinstance(out.get("resources"), Mapping) and isinstance(value, Mapping):
            merged = dict(out["resources"])
            for part, amounts in value.items():
                if isinstance(merged.get(part), Mapping) and isinstance(amounts, Mapping):
                    merged[part] = {**merged[part], **amounts}
                elif amounts is not None:
                    merged[part] = amounts
            out["resources"] = merged
        else:
            out[key] = value
    return out


def _runner(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(config.get("runner"))


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _view(runner: Mapping[str, Any]) -> Runner:
    env: dict[str, str | None] = {}
    for item in runner.get("env") or ():
        if isinstance(item, Mapping) and isinstance(item.get("name"), str):
            value = item.get("value")
            env[item["name"]] = None if item.get("valueFrom") is not None else ("" if value is None else str(value))
    resources = _mapping(runner.get("resources"))
    names = frozenset(str(k) for part in ("requests", "limits") for k in _mapping(resources.get(part)))
    return Runner(_strings(runner.get("command")), _strings(runner.get("args")), env, names)


def engine_runner(runtime_spec: Mapping[str, Any], isvc_spec: Mapping[str, Any] | None) -> Runner | None:
    """The runner that runs the engine's server, or None when neither side declares one."""
    runtime_engine = _mapping(runtime_spec.get("engineConfig"))
    isvc_engine = _mapping((isvc_spec or {}).get("engine"))
    merged = merge_runner(_runner(runtime_engine), _runner(isvc_engine))
    runtime_leader, isvc_leader = _mapping(runtime_engine.get("leader")), _mapping(isvc_engine.get("leader"))
    if runtime_leader or isvc_leader:
        merged = merge_runner(merged, merge_runner(_runner(runtime_leader), _runner(isvc_leader)))
    return _view(merged) if merged else None
