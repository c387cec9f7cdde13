"""The rules revisions what-if calls bring (Simulate and Lint with rule files), kept by content for
the next call about the same files: the last few used. Each holds a durable-rules engine, whose
rulesets live in the engine's C memory until closed, and the memos decisions at it made; one
pushed out is closed once the calls using it end (at once when none is)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager

from policyd.policy.revision import Revision


class KeptRevisions:
    def __init__(self, size: int, close: Callable[[Revision], None]) -> None:
        self.size = size
        self._close = close
        self._items: OrderedDict[Hashable, Revision] = OrderedDict()
        self._users: dict[int, int] = {}  # by id of each revision in use
        self._retired: dict[int, Revision] = {}  # pushed out while in use: closed by its last user
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    @contextmanager
    def held(self, key: Hashable, build: Callable[[], Revision]) -> Iterator[Revision]:
        """The revision kept at ``key``, else ``build``'s (built outside the lock: it takes seconds),
        open until the block ends."""
        revision = self._take(key)
        if revision is None:
            revision = self._keep(key, build())
        try:
            yield revision
        finally:
            with self._lock:
                left = self._users[id(revision)] - 1
                if left:
                    self._users[id(revision)] = left
                else:
                    del self._users[id(revision)]
                done = self._retired.pop(id(revision), None) if not left else None
            if done is not None:
                self._close(done)

    def _use(self, revision: Revision) -> Revision:
        """Callers hold the lock."""
        self._users[id(revision)] = self._users.get(id(revision), 0) + 1
        return revision

    def _take(self, key: Hashable) -> Revision | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return self._use(found)

    def _keep(self, key: Hashable, built: Revision) -> Revision:
        idle: list[Revision] = []
        with self._lock:
            raced = self._items.get(key)
            if raced is not None:  # another call built the same files meanwhile: its revision serves
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
        for revision in idle:
            self._close(revision)
        return chosen
