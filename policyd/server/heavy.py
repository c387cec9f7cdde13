"""Calls that bring objects of their own — a request catalog, a what-if proposal or rules — and
what they may take. Their objects are decided on in a memo scope of the call's own (memo.transient:
nothing of them outlives the call), by a plain Decider (the serving one keeps what it judged,
by shape), and the costly ones — Simulate, Lint, a request catalog past HEAVY_CATALOG_BYTES —
are let in a few at a time: past the limit they are RESOURCE_EXHAUSTED at once, so they never hold
every worker thread while the webhook's Admit and the controller's Decide (no request catalog, or
a pin of a few kilobytes) wait behind them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from google.protobuf.message import Message

from policyd.contract import policy_pb2 as pb
from policyd.errors import Busy
from policyd.memo import transient

WHATIF = frozenset({"Simulate", "Lint"})
# a pin or the objects a review just created are a few kilobytes; a catalog past this is a bulk of its own
HEAVY_CATALOG_BYTES = 64 << 10


def _catalog(request: Message) -> pb.RequestCatalog | None:
    catalog = getattr(request, "catalog", None)
    return catalog if isinstance(catalog, pb.RequestCatalog) and catalog.objects else None


def brings_objects(rpc: str, request: Message) -> bool:
    """Whether the call decides on objects of its own (which no memo may keep)."""
    return rpc in WHATIF or _catalog(request) is not None


def is_heavy(rpc: str, request: Message) -> bool:
    catalog = _catalog(request)
    return rpc in WHATIF or (catalog is not None and catalog.ByteSize() > HEAVY_CATALOG_BYTES)


class HeavyCalls:
    """At most ``limit`` heavy calls at once; ``on_idle`` when the last of them ends (the heap
    they grew is given back)."""

    def __init__(self, limit: int, on_idle: Callable[[], None] = lambda: None) -> None:
        self.limit = max(1, limit)
        self._on_idle = on_idle
        self._running = 0
        self._lock = threading.Lock()

    @property
    def running(self) -> int:
        return self._running

    def scope(self, rpc: str, request: Message) -> AbstractContextManager[None]:
        """Where the call's handler runs: admitted (Busy when full) and transient as it needs."""
        if not brings_objects(rpc, request):
            return nullcontext()
        return self._admitted(is_heavy(rpc, request))

    @contextmanager
    def _admitted(self, heavy: bool) -> Iterator[None]:
        if heavy:
            with self._lock:
                if self._running >= self.limit:
                    raise Busy(
                        f"{self._running} calls with catalogs or rules of their own are in progress, the most "
                        f"policyd takes at once (a quarter of --workers): retry"
                    )
                self._running += 1
        try:
            with transient():
                yield
        finally:
            if heavy:
                with self._lock:
                    self._running -= 1
                    idle = not self._running
                if idle:
                    self._on_idle()
