"""A cache is a field of the object whose lifetime it shares: no module of policyd outside the
gRPC edge (policyd/server/) keeps one in a module global. Found two ways: by type (a bounded
memo, an LRU, a thread-local, a functools cache of a function with parameters), and by
behaviour (a module-level container that grows while policyd decides)."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from cachetools import Cache
from testkit.catalog_dir import load_directory
from testkit.shared import CATALOG, RULES

import policyd
from policyd.catalog.snapshot import Catalog
from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb
from policyd.memo import Bounded, Lru
from policyd.server.fieldcheck import FieldCheck
from policyd.server.observability import DecisionLog
from policyd.server.servicer import PolicyServicer
from policyd.server.state import ServingState

EDGE = "policyd.server"  # where caches of encoded answers and call counters live, by design
CACHES = (Bounded, Lru, Cache, threading.local)
CONTAINERS = (dict, list, set, OrderedDict, deque, weakref.WeakValueDictionary, weakref.WeakKeyDictionary)


def _modules() -> Iterator[ModuleType]:
    for info in pkgutil.walk_packages(policyd.__path__, "policyd."):
        if info.name != EDGE and not info.name.startswith(EDGE + "."):
            yield importlib.import_module(info.name)


def _own(module: ModuleType) -> Iterator[tuple[str, Any]]:
    """The module's globals that are its own (not names it imported)."""
    for name, value in vars(module).items():
        imported = inspect.ismodule(value) or getattr(value, "__module__", module.__name__) != module.__name__
        if not imported or isinstance(value, CONTAINERS):
            yield name, value


def _a_cache(value: Any) -> bool:
    if isinstance(value, CACHES):
        return True
    if callable(value) and hasattr(value, "cache_info"):
        # a functools cache of a function without parameters is a value made once, not a cache
        return bool(inspect.signature(value.__wrapped__).parameters)
    if inspect.isclass(value) or inspect.isfunction(value) or inspect.ismodule(value):
        return False
    fields = getattr(value, "__dict__", {})
    return any(isinstance(v, CACHES) for v in fields.values())


def test_no_module_outside_the_edge_holds_a_cache_in_a_global() -> None:
    found = [f"{m.__name__}.{name}" for m in _modules() for name, value in _own(m) if _a_cache(value)]
    assert found == []


def _sizes() -> dict[str, int]:
    return {
        f"{m.__name__}.{name}": len(value)
        for m in _modules()
        for name, value in _own(m)
        if isinstance(value, CONTAINERS)
    }


def _decide_everything() -> None:
    """Every decision the daemon makes, on the OME catalog, through the servicer's handlers."""
    state = ServingState(RULES, None, lambda attempt: None)
    catalog = Catalog.of(load_directory(CATALOG).objects)
    servicer = PolicyServicer(state, DecisionLog(None))
    with state.hold_decider() as decider:
        for key in sorted(catalog.models)[:20]:
            doc = {
                "kind": "InferenceService",
                "metadata": {"name": "chat", "namespace": "default"},
                "spec": {"model": {"name": key[2]}, "engine": {"minReplicas": 1}},
            }
            isvc = rpb.InferenceServiceInput(manifest=json.dumps(doc))
            for handler, request in (
                (servicer._select, pb.SelectRequest(inference_service=isvc)),
                (servicer._explain, pb.ExplainRequest(inference_service=isvc)),
                (servicer._effective, pb.EffectiveRequest(inference_service=isvc)),
                (servicer._decide, pb.DecideRequest(inference_service=isvc)),
                (servicer._admit, pb.AdmitRequest(object=rpb.Object(manifest=isvc.manifest))),
            ):
                handler(request, decider, catalog, FieldCheck())  # type: ignore[operator]
        for runtime in list(catalog.runtimes.values())[:20]:
            servicer._admit(
                pb.AdmitRequest(object=rpb.Object(manifest=json.dumps(runtime.raw))), decider, catalog, FieldCheck()
            )
        plain = decider.plain()
        servicer.whatif.lint(pb.LintRequest(), plain, catalog, FieldCheck())
        servicer.whatif.simulate(pb.SimulateRequest(), plain, catalog, FieldCheck())


def test_deciding_grows_no_module_level_container_outside_the_edge() -> None:
    before = _sizes()
    _decide_everything()
    grown = {name: (before.get(name, 0), size) for name, size in _sizes().items() if size > before.get(name, 0)}
    assert grown == {}
