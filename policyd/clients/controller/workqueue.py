"""Work keys for several workers, each key waiting at most once and never in two workers at
once: a key added again before its turn is done once; one added while a worker has it waits
until that worker is done with it, then goes again; a key that failed comes back after an
exponential backoff; lower priorities go first."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import Hashable

BASE_DELAY = 0.5
MAX_DELAY = 60.0
Key = tuple[Hashable, ...]


class WorkQueue:
    def __init__(self, priority: dict[Hashable, int] | None = None) -> None:
        self._priority = priority or {}
        self._due: dict[Key, tuple[float, int]] = {}  # waiting keys: when, and the entry that stands
        self._later: list[tuple[float, int, Key]] = []  # by time; entries the key no longer has are skipped
        self._ready: list[tuple[int, float, int, Key]] = []  # due now, by priority then time
        self._processing: set[Key] = set()
        self._again: dict[Key, float] = {}  # added while processing: when it may go again
        self._failures: dict[Key, int] = {}
        self._order = itertools.count()
        self._changed = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def __len__(self) -> int:
        return len(self._due)

    def add(self, key: Key, delay: float = 0.0) -> None:
        due = time.monotonic() + delay
        if key in self._processing:
            self._again[key] = min(due, self._again.get(key, due))
            return
        if key in self._due and self._due[key][0] <= due:
            return
        order = next(self._order)
        self._due[key] = (due, order)
        if delay <= 0:
            heapq.heappush(self._ready, (self._priority.get(key[0], 0), due, order, key))
        else:
            heapq.heappush(self._later, (due, order, key))
        self._idle.clear()
        self._changed.set()

    def failed(self, key: Key) -> float:
        """The worker failed ``key``: it goes again after its backoff; returns the delay."""
        failures = self._failures.get(key, 0) + 1
        self._failures[key] = failures
        delay = min(MAX_DELAY, BASE_DELAY * 2.0 ** (failures - 1))
        self.again(key, delay)
        return delay

    def again(self, key: Key, delay: float) -> None:
        """The worker is done with ``key`` for now; it goes again after ``delay`` seconds."""
        self._release(key)
        self.add(key, delay)

    def done(self, key: Key) -> None:
        """The worker did ``key``: its backoff is forgotten."""
        self._failures.pop(key, None)
        self._release(key)

    def _release(self, key: Key) -> None:
        self._processing.discard(key)
        again = self._again.pop(key, None)
        if again is not None:
            self.add(key, max(0.0, again - time.monotonic()))
        elif not self._processing and not self._due_now():
            self._idle.set()

    def _due_now(self) -> bool:
        self._promote(time.monotonic())
        return any(self._due.get(key) == (due, order) for _, due, order, key in self._ready)

    def _promote(self, now: float) -> None:
        """Move the waiting keys whose time has come to the ready ones."""
        while self._later and self._later[0][0] <= now:
            due, order, key = heapq.heappop(self._later)
            if self._due.get(key) == (due, order):
                heapq.heappush(self._ready, (self._priority.get(key[0], 0), due, order, key))

    async def idle(self) -> None:
        """Until nothing is due now and no worker has a key (keys waiting for a later time may remain)."""
        await self._idle.wait()

    async def get(self) -> Key:
        """The next key to work on; the caller ends its turn with done, failed or again."""
        while True:
            now = time.monotonic()
            self._promote(now)
            while self._ready:
                _, due, order, key = heapq.heappop(self._ready)
                if self._due.get(key) == (due, order):
                    del self._due[key]
                    self._processing.add(key)
                    return key
            if not self._processing:
                self._idle.set()
            self._changed.clear()
            wait = (self._later[0][0] if self._later else now + 3600) - now
            # asyncio.timeout, not wait_for: no task of its own, which kopf would wait for when stopping
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._changed.wait()
