"""Freeing a rules revision once nothing uses it: calls in flight when a reload swaps it out
still judge with it, so it is closed when the last of them ends (at once when none is)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


class RefCounts(Generic[T]):
    def __init__(self, close: Callable[[T], None]) -> None:
        self._close = close
        self._lock = threading.Lock()
        self._users: dict[int, int] = {}
        self._retired: dict[int, T] = {}

    @contextmanager
    def hold(self, current: Callable[[], T]) -> Iterator[T]:
        """The current value, kept open until the block ends."""
        with self._lock:
            value = current()
            self._users[id(value)] = self._users.get(id(value), 0) + 1
        try:
            yield value
        finally:
            with self._lock:
                left = self._users[id(value)] - 1
                if left:
                    self._users[id(value)] = left
                else:
                    del self._users[id(value)]
                closing = self._retired.pop(id(value), None) if not left else None
            if closing is not None:
                self._close(closing)

    def retire(self, value: T, swap: Callable[[], None]) -> None:
        """Swap ``value`` out (``swap`` runs under the lock, so no new holder gets it), then close
        it once its holders are done."""
        with self._lock:
            swap()
            idle = id(value) not in self._users
            if not idle:
                self._retired[id(value)] = value
        if idle:
            self._close(value)
