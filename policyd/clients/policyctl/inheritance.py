"""What each component an InferenceService declares inherits from its runtime (spec 001: OME
merges the runtime's engineConfig, decoderConfig and routerConfig into the engine, decoder and
router): the fields the runtime sets that the InferenceService leaves to it, and those it
overrides. Fields are named at the grain the renderer merges them (policyd/clients/renderer/merge.py's
table) — a map by key (``annotations[prometheus.io/port]``), a keyed list by item (``runner.env[NAMESPACE]``),
anything else whole (``tolerations``, ``runner.command``) — read from the two manifests alone."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from policyd.clients.renderer.merge import CONFIG_FIELDS, ByItem, ByKey, Fields, item_key

# The runtime's config each component merges.
CONFIGS = {"engine": "engineConfig", "decoder": "decoderConfig", "router": "routerConfig"}


def inheritance(
    runtime: Mapping[str, Any], isvc: Mapping[str, Any], modes: Mapping[str, tuple[str, str]]
) -> dict[str, Any]:
    """For each component in ``modes`` (its mode and the rule that set it, as Effective answered):
    the runtime config it merges, its mode, and the fields inherited and overridden, sorted."""
    runtime_spec, isvc_spec = runtime.get("spec") or {}, isvc.get("spec") or {}
    out: dict[str, Any] = {}
    for component, (mode, source) in modes.items():
        config = CONFIGS[component]
        parts = list(_parts("", runtime_spec.get(config) or {}, isvc_spec.get(component) or {}, CONFIG_FIELDS))
        out[component] = {
            "runtimeConfig": config,
            "mode": mode,
            "modeSource": source,
            "inherited": sorted(path for path, overridden in parts if not overridden),
            "overridden": sorted(path for path, overridden in parts if overridden),
        }
    return out


def _parts(path: str, theirs: Any, mine: Any, grain: ByKey | ByItem | Fields | None) -> Iterator[tuple[str, bool]]:
    """Each part of the runtime's value at ``path`` with whether the InferenceService's value
    (``mine``) overrides it. A value of another shape than the merge expects replaces it whole,
    as the merge does; a null counts as unset."""
    if isinstance(grain, dict) and isinstance(theirs, Mapping) and isinstance(mine, Mapping | None):
        for key, value in theirs.items():
            if value is not None:
                yield from _parts(f"{path}.{key}" if path else key, value, (mine or {}).get(key), grain.get(key))
    elif isinstance(grain, ByKey) and isinstance(theirs, Mapping) and isinstance(mine, Mapping | None):
        yield from ((f"{path}[{key}]", mine is not None and key in mine) for key in theirs)
    elif isinstance(grain, ByItem) and isinstance(theirs, list) and isinstance(mine, list | None):
        overridden = {k for item in mine or [] if (k := item_key(item, grain.key)) is not None}
        for item in theirs:
            key = item_key(item, grain.key)
            yield f"{path}[{key}]", key is not None and key in overridden
    else:
        yield path, mine is not None
