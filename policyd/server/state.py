"""What the daemon serves from: the current rules revision and catalog snapshot,
each swapped atomically. A call reads both once, so it finishes on the revisions
it started with."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf.message import Message

from policyd.catalog.directory import load_directory
from policyd.catalog.snapshot import Catalog, CatalogObject, Key, key_of
from policyd.decision.orchestrator import catalog_refusals, prepare
from policyd.policy.loader import RuleFileError
from policyd.policy.revision import Revision, build_revision
from policyd.resources.objects import ServingRuntime

log = logging.getLogger("policyd.state")


@dataclass(frozen=True)
class ReloadAttempt:
    revision: str
    ok: bool
    at: float
    error: str = ""
    file: str = ""
    rule_id: str = ""
    line: int = 0


CacheKey = tuple[str, str, str, bytes]


_ENTRY_BYTES = 400  # what an entry costs beside its encoded response: key, node, object headers


@dataclass
class DecisionCache:
    """Responses by (rules revision, catalog revision, RPC, request digest), least recently
    used first out, within a byte budget. Responses are held encoded, so the budget is the
    memory they take (a message object of an Explain over a large catalog takes several
    times its encoded size); a hit is decoded, which costs little next to deciding."""

    budget_bytes: int = 64 << 20
    _items: OrderedDict[CacheKey, tuple[type[Message], bytes]] = field(default_factory=OrderedDict)
    _bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: CacheKey) -> Message | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
        return hit[0].FromString(hit[1])

    def put(self, key: CacheKey, value: Message) -> None:
        if self.budget_bytes <= 0:
            return
        data = value.SerializeToString()
        if len(data) + _ENTRY_BYTES > self.budget_bytes:
            return
        with self._lock:
            if key in self._items:
                self._bytes -= len(self._items.pop(key)[1]) + _ENTRY_BYTES
            self._items[key] = (type(value), data)
            self._bytes += len(data) + _ENTRY_BYTES
            while self._bytes > self.budget_bytes:
                self._bytes -= len(self._items.popitem(last=False)[1][1]) + _ENTRY_BYTES


class ServingState:
    def __init__(
        self,
        rules_dir: Path,
        catalog_dir: Path | None,
        on_reload: Callable[[ReloadAttempt], None],
        cache_bytes: int = 64 << 20,
        parse_cache: Path | None = None,
    ) -> None:
        self.rules_dir = rules_dir
        self.catalog_dir = catalog_dir
        self.parse_cache = parse_cache
        self._on_reload = on_reload
        self._lock = threading.Lock()
        self.cache = DecisionCache(cache_bytes)
        self.revision: Revision = build_revision(rules_dir)
        self.last_attempt = ReloadAttempt(self.revision.id, True, time.time())
        self.catalog_errors: list[str] = []
        self._dir_objects: dict[Key, CatalogObject] = {}
        self._applied: dict[Key, CatalogObject] = {}
        self._deleted: set[Key] = set()
        self.catalog = Catalog.of([])
        if catalog_dir is not None:
            self.reload_catalog()

    def reload_rules(self) -> ReloadAttempt:
        """Build the rules off to the side; swap them in only when every check passes."""
        try:
            revision = build_revision(self.rules_dir)
        except RuleFileError as err:
            attempt = ReloadAttempt(self.revision.id, False, time.time(), str(err), err.file, err.rule_id, err.line)
        else:
            revision.engine.warm_from(self.revision.engine)
            prepare(revision, self.catalog)
            self.revision = revision
            attempt = ReloadAttempt(revision.id, True, time.time())
        self.last_attempt = attempt
        self._on_reload(attempt)
        return attempt

    def _publish(self) -> None:
        merged = {**self._dir_objects, **self._applied}
        for key in self._deleted:
            merged.pop(key, None)
        self.catalog = Catalog.of(list(merged.values()))

    def reload_catalog(self) -> None:
        assert self.catalog_dir is not None
        loaded = load_directory(self.catalog_dir, self.parse_cache)
        errors, accepted = list(loaded.errors), []
        for obj in loaded.objects:
            # What the webhook would refuse in a runtime never enters the catalog.
            refusals = catalog_refusals(self.revision, obj) if isinstance(obj, ServingRuntime) else []
            errors.extend(f"{obj.kind}/{obj.meta.name}: {r.field}: {r.message}" for r in refusals)
            if not refusals:
                accepted.append(obj)
        for error in errors:
            log.warning("catalog manifest refused", extra={"error": error})
        with self._lock:
            self.catalog_errors = errors
            self._dir_objects = {key_of(o): o for o in accepted}
            self._publish()
        prepare(self.revision, self.catalog)

    def apply(self, objects: list[CatalogObject]) -> Catalog:
        with self._lock:
            for obj in objects:
                key = key_of(obj)
                self._applied[key] = obj
                self._deleted.discard(key)
            self.catalog = self.catalog.changed(objects)  # the same as _publish, from the changes alone
            return self.catalog

    def delete(self, keys: list[Key]) -> tuple[Catalog, int]:
        with self._lock:
            current = self.catalog
            removed = [k for k in keys if k in current.runtimes or k in current.models]
            for key in removed:
                self._applied.pop(key, None)
                self._deleted.add(key)
            self.catalog = current.changed(deletes=removed)
            return self.catalog, len(removed)
