"""policyd's caches: one facility, with the two policies each kind of key pays for.

- ``Lru``: cachetools' LRUCache behind a lock, for what is keyed by requests, revisions or
  scopes, whose reuse is uneven: the least recently used go first. Bounded by a count, or by
  what ``weigh`` makes of the values (bytes, say).
- ``Bounded``: a dict read without a lock and emptied when full, for what is keyed by catalog
  objects and read by the thousand in one decision: an LRU's bookkeeping on every read would
  cost more than filling it again after a reload or a new catalog.

A value is computed outside any lock: two threads may compute one key at once, and either
result stands (every cached value is a pure function of its key).

Inside ``transient()`` (a call that brings objects of its own: a request catalog, a what-if
proposal) what a ``Bounded`` memo would keep goes to the block's own scratch instead, read there
and dropped at its end: objects no later call will send again must not fill the memos (a bound
by count is no bound on bytes when one runtime can bring a thousand entries), and what the call
built goes with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

from cachetools import LRUCache

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


# (the memo, its key) → value, inside transient(); None outside
_SCRATCH: ContextVar[dict[tuple[int, Any], Any] | None] = ContextVar("policyd_memo_scratch", default=None)


@contextmanager
def transient() -> Iterator[None]:
    """Within the block (its thread, or context), Bounded memos keep nothing beyond it."""
    token = _SCRATCH.set({})
    try:
        yield
    finally:
        _SCRATCH.reset(token)


def keeping() -> bool:
    """Whether what is memoised now outlives the call (outside transient()): for caches of
    their own owners (a scope's encodings, say) to keep nothing of a transient call either."""
    return _SCRATCH.get() is None


class Bounded(Generic[K, V]):
    __slots__ = ("_items", "size")

    def __init__(self, size: int) -> None:
        self._items: dict[K, V] = {}
        self.size = size

    def get(self, key: K) -> V | None:
        hit = self._items.get(key)
        if hit is None and (scratch := _SCRATCH.get()) is not None:
            return scratch.get((id(self), key))
        return hit

    def put(self, key: K, value: V) -> V:
        if (scratch := _SCRATCH.get()) is not None:
            scratch[(id(self), key)] = value
            return value
        if len(self._items) >= self.size:
            self._items.clear()
        self._items[key] = value
        return value

    def get_or(self, key: K, compute: Callable[[], V]) -> V:
        hit = self.get(key)
        return hit if hit is not None else self.put(key, compute())

    def put_all(self, items: Mapping[K, V]) -> None:
        """Keep a batch of values at once (a rules engine's batch of judgements)."""
        if (scratch := _SCRATCH.get()) is not None:
            scratch.update(((id(self), k), v) for k, v in items.items())
            return
        if len(self._items) + len(items) > self.size:
            self._items.clear()
        self._items.update(items)

    def newest(self, count: int) -> list[K]:
        """The last ``count`` keys kept, oldest first."""
        return list(self._items)[-count:]

    def __len__(self) -> int:
        return len(self._items)


class Lru(Generic[K, V]):
    __slots__ = ("_items", "_lock", "_weigh")

    def __init__(self, size: int, weigh: Callable[[V], int] | None = None) -> None:
        self._items: LRUCache[K, V] = LRUCache(size, getsizeof=weigh)
        self._weigh = weigh
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._items.get(key)

    def put(self, key: K, value: V) -> V:
        """Keep ``value`` (not when it alone outweighs the bound: it is only returned)."""
        if self._weigh is not None and self._weigh(value) > self._items.maxsize:
            return value
        with self._lock:
            self._items[key] = value
        return value

    def get_or(self, key: K, compute: Callable[[], V]) -> V:
        hit = self.get(key)
        return hit if hit is not None else self.put(key, compute())

    def pop(self, key: K) -> V | None:
        with self._lock:
            return self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)
