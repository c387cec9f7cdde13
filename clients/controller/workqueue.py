"""Work keys, each waiting at most once: a key added again before its turn is done once; a
key that failed comes back after an exponential backoff; lower priorities go first."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Hashable

BASE_DELAY = 0.5
MAX_DELAY = 60.0


class WorkQueue:
    def __init__(self, priority: dict[Hashable, int] | None = None) -> None:
        self._due: dict[tuple[Hashable, ...], float] = {}
        self._failures: dict[tuple[Hashable, ...], int] = {}
        self._priority = priority or {}
        self._changed = asyncio.Event()

    def __len__(self) -> int:
        return len(self._due)

    def add(self, key: tuple[Hashable, ...], delay: float = 0.0) -> None:
        due = time.monotonic() + delay
        if key not in self._due or due < self._due[key]:
            self._due[key] = due
            self._changed.set()

    def failed(self, key: tuple[Hashable, ...]) -> float:
        """Schedule ``key`` again after its backoff; returns the delay."""
        failures = self._failures.get(key, 0) + 1
        self._failures[key] = failures
        delay = min(MAX_DELAY, BASE_DELAY * 2.0 ** (failures - 1))
        self.add(key, delay)
        return delay

    def done(self, key: tuple[Hashable, ...]) -> None:
        self._failures.pop(key, None)

    async def get(self) -> tuple[Hashable, ...]:
        while True:
            now = time.monotonic()
            ready = [key for key, due in self._due.items() if due <= now]
            if ready:
                key = min(ready, key=lambda k: (self._priority.get(k[0], 0), self._due[k]))
                del self._due[key]
                return key
            self._changed.clear()
            wait = min(self._due.values(), default=now + 3600) - now
            # asyncio.timeout, not wait_for: no task of its own, which kopf would wait for when stopping
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._changed.wait()
