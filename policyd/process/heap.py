"""Garbage collection and heap upkeep for a daemon whose data outlives every request.

The catalog and the rules are loaded once and kept: a full collection walks all of them, and
at 20,000 runtimes full passes were 45 % of an uncached decision. After loading, everything
alive is frozen into the permanent generation (gc.freeze: never walked again), and the young
generation is collected less often, as a decision allocates many short-lived records. No
collection precedes the freeze: loading makes no garbage cycles (a collection after loading
20,000 runtimes found none, and took 0.3 s of the start), and what it drops goes by its
reference counts, frozen or not.

Loading also leaves the C heap with the free space of what parsing made and dropped (the
texts, the YAML nodes, the pickles of the parse workers): glibc keeps it unless asked, and at
20,000 runtimes it is a quarter of the daemon's memory. It is given back after each load, and
after a rules reload — which is not frozen: the revision it replaces, cycles and all (its
engine and the callbacks it holds), must stay collectable once the calls holding it end."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Callable

GEN0_THRESHOLD = 20_000  # CPython's default is 700


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc: its allocator returns memory its own way
        return None
    return trim


_TRIM = _malloc_trim()


def settle_heap() -> None:
    """After loading the catalog: freeze what is alive, and give back the heap's free space."""
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)
    give_back_heap()


def give_back_heap() -> None:
    if _TRIM is not None:
        _TRIM(0)


def collect_and_give_back() -> None:
    """After a call that built much and dropped it (a request catalog of megabytes): its cycles
    collected first (the heap is frozen, so a collection walks only what came since), then the
    heap's free space given back."""
    gc.collect()
    give_back_heap()
