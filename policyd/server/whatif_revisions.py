"""The rules revisions what-if calls bring (Simulate and Lint with rule files), kept by content for
the next call about the same files: the last few used. Each is a Decider holding a durable-rules
engine, whose rulesets live in the engine's C memory until closed; one pushed out is closed once
the calls using it end (at once when none is)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager

from policyd.decision.decider import Decider


class KeptRevisions:
    def __init__(self, size: int, close: Callable[[Decider], None] = Decider.close) -> None:
        self.size = size
        self._close = close
        self._items: OrderedDict[Hashable, Decider] = OrderedDict()
        self._users: dict[int, int] = {}  # by id of each decider in use
        self._retired: dict[int, Decider] = {}  # pushed out while in use: closed by its last user
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    @contextmanager
    def held(self, key: Hashable, build: Callable[[], Decider]) -> Iterator[Decider]:
        """The decider kept at ``key``, else ``build``'s (built outside the lock: it takes seconds),
        open until the block ends."""
        decider = self._take(key)
        if decider is None:
            decider = self._keep(key, build())
        try:
            yield decider
        finally:
            with self._lock:
                left = self._users[id(decider)] - 1
                if left:
                    self._users[id(decider)] = left
                else:
                    del self._users[id(decider)]
                done = self._retired.pop(id(decider), None) if not left else None
            if done is not None:
                self._close(done)

    def _use(self, decider: Decider) -> Decider:
        """Callers hold the lock."""
        self._users[id(decider)] = self._users.get(id(decider), 0) + 1
        return decider

    def _take(self, key: Hashable) -> Decider | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return self._use(found)

    def _keep(self, key: Hashable, built: Decider) -> Decider:
        idle: list[Decider] = []
        with self._lock:
            raced = self._items.get(key)
            if raced is not None:  # another call built the same files meanwhile: its decider serves
                idle.append(built)
                chosen = self._use(raced)
            else:
                self._items[key] = chosen = self._use(built)
                while len(self._items) > self.size:
                    _, old = self._items.popitem(last=False)
                    if id(old) in self._users:
                        self._retired[id(old)] = old
                    else:
                        idle.append(old)
        for decider in idle:
            self._close(decider)
        return chosen
