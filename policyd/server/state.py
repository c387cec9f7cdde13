"""What the daemon serves from: the current rules revision and catalog snapshot,
each swapped atomically. A call reads both once, so it finishes on the revisions
it started with."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policyd.catalog.directory import DirectoryLoad, no_collection
from policyd.catalog.snapshot import Catalog, CatalogObject, Key, key_of
from policyd.catalog.source import CatalogSource, Signature
from policyd.decision.decider import Decider
from policyd.decision.runtime_alone import catalog_refusals
from policyd.facts.derive import Derivation
from policyd.kube.sync import Refusal
from policyd.memo import Lru
from policyd.policy.loader import RuleFileError
from policyd.policy.revision import Revision, build_revision
from policyd.resources.objects import ServingRuntime
from policyd.server.revision_refs import RefCounts
from policyd.server.wire import Encoded

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
ENTRY_OVERHEAD = 400  # bytes of a cache entry besides its response: the key, its tuples, the dict slot


@dataclass(frozen=True)
class Override:
    """An ApplyObjects / DeleteObjects change to a key, over what the watched directory has."""

    action: str  # applied or deleted
    at: float
    obj: CatalogObject | None  # the applied object; None when deleted
    base: str | None  # the directory's object's digest when the change was made; None when it had none


@dataclass(frozen=True)
class Change:
    """What one apply or delete did: created, configured, unchanged, deleted or not_found;
    ``file`` is the watched directory's file when the directory also has the key."""

    key: Key
    action: str
    file: str = ""


Cached = tuple[Encoded[Any], tuple[str, ...]]  # a response, and the warnings that came with it


def _weight(value: Cached) -> int:
    response, warnings = value
    return len(response.data) + sum(map(len, warnings)) + ENTRY_OVERHEAD


class DecisionCache:
    """Responses by (rules revision, catalog revision, RPC, request digest), least recently
    used first out, within a byte budget (an Explain over a large catalog is not small). Kept
    serialized: a message in memory is several times its wire size, so only bytes make the
    budget the memory used."""

    def __init__(self, budget_bytes: int = 64 << 20) -> None:
        self.enabled = budget_bytes > 0
        self._items: Lru[CacheKey, Cached] = Lru(max(budget_bytes, 1), _weight)

    def get(self, key: CacheKey) -> Cached | None:
        return self._items.get(key)

    def put(self, key: CacheKey, value: Encoded[Any], warnings: tuple[str, ...] = ()) -> None:
        if self.enabled:
            self._items.put(key, (value, warnings))


class ServingState:
    def __init__(
        self,
        rules_dir: Path,
        catalog_dir: Path | None,
        on_reload: Callable[[ReloadAttempt], None],
        cache_bytes: int = 64 << 20,
        last_good_rules: Path | None = None,
        changes: dict[Key, Override] | None = None,
        parse_cache: Path | None = None,
    ) -> None:
        """``last_good_rules``: a copy of the last revision that served, served when ``rules_dir`` is
        refused (the refusal is the last attempt); ``changes``: API changes kept from before a restart;
        ``parse_cache``: where what catalog files parsed into is kept, by content."""
        self.rules_dir = rules_dir
        self._catalog_dir = catalog_dir
        self._on_reload = on_reload
        self._lock = threading.Lock()
        self.cache = DecisionCache(cache_bytes)
        # what deciding derives from manifests, shared by every revision's decider: a reload does
        # not derive the catalog's facts again
        self.facts = Derivation()
        try:
            self.decider = Decider(build_revision(rules_dir), self.facts)
            self.last_attempt = ReloadAttempt(self.revision.id, True, time.time())
        except RuleFileError as err:
            if last_good_rules is None:
                raise
            self.decider = Decider(build_revision(last_good_rules), self.facts)
            self.last_attempt = ReloadAttempt(
                self.revision.id, False, time.time(), str(err), err.file, err.rule_id, err.line
            )
        # a decider swapped out by a reload is closed once the calls deciding with it end
        self._refs: RefCounts[Decider] = RefCounts(Decider.close)
        self.catalog_errors: list[str] = []  # the faults, then the refused manifests
        self.catalog_faults: list[str] = []  # files (or the directory) whose last good content serves
        self.on_catalog: Callable[[], None] = lambda: None  # after each directory load (metrics)
        self._source = CatalogSource(catalog_dir, parse_cache=parse_cache) if catalog_dir is not None else None
        self._reload_lock = threading.Lock()
        self._retry: threading.Timer | None = None
        # the watched source's objects: the directory's, or under --cluster the cluster's
        self._dir_objects: dict[Key, CatalogObject] = {}
        self._dir_files: dict[Key, str] = {}
        self._overrides: dict[Key, Override] = dict(changes or {})
        self.on_changes: Callable[[dict[Key, Override]], None] = lambda _: None  # API changes in force, to keep
        self.changes_kept = False  # whether on_changes keeps them across restarts (--state-dir)
        self._catalog = Catalog.of([])
        if catalog_dir is not None:
            self.reload_catalog()
        else:
            self._publish()

    def reload_rules(self) -> ReloadAttempt:
        """Build the rules off to the side; swap them in only when every check passes."""
        try:
            revision = build_revision(self.rules_dir)
        except RuleFileError as err:
            attempt = ReloadAttempt(self.revision.id, False, time.time(), str(err), err.file, err.rule_id, err.line)
            self.last_attempt = attempt
        else:
            revision.engine.warm_from(self.revision.engine)
            decider = Decider(revision, self.facts)
            decider.prepare(self._catalog)
            attempt = ReloadAttempt(revision.id, True, time.time())

            def swap() -> None:
                # the attempt first: a call that decides with the new rules reports them as the last
                # attempt too (closing the old decider, after the swap, can take a while)
                self.last_attempt = attempt
                self.decider = decider

            self._refs.retire(self.decider, swap)
        self._on_reload(attempt)
        return attempt

    def catalog_signature(self) -> Signature:
        """The catalog directory's files as its last load found them."""
        return self._source.signature() if self._source is not None else ()

    @property
    def catalog(self) -> Catalog:
        """The catalog snapshot serving now."""
        return self._catalog

    @property
    def revision(self) -> Revision:
        """The rules revision serving now."""
        return self.decider.revision

    def hold_decider(self) -> AbstractContextManager[Decider]:
        """The current rules revision's decider, kept open for the block (a reload closes it only after)."""
        return self._refs.hold(lambda: self.decider)

    def _served(self, key: Key) -> CatalogObject | None:
        """What the catalog serves at ``key``: the API's change, else the directory's object."""
        override = self._overrides.get(key)
        return self._dir_objects.get(key) if override is None else override.obj

    def _publish(self, keys: Iterable[Key] | None = None) -> None:
        """The catalog from the directory's objects and the API's changes: anew from each key
        the catalog or either holds, or only at ``keys`` (what an API change touched). Either
        way the next snapshot is made from the changes (``Catalog.changed``), so what the
        serving one derived carries over."""
        current = self._catalog
        if keys is None:
            keys = {*current.keys(), *self._dir_objects, *self._overrides}
        upserts: list[CatalogObject] = []
        deletes: list[Key] = []
        for key in keys:
            served, now = self._served(key), current.get(key)
            if served is None:
                if now is not None:
                    deletes.append(key)
            elif now is None or now.digest != served.digest:
                upserts.append(served)
        if upserts or deletes:
            self._catalog = current.changed(upserts, deletes)
            self.decider.prepare(self._catalog)

    def _retry_in(self, seconds: float) -> None:
        """Load again once the file being written has settled (no watcher event may follow)."""
        if seconds <= 0 or (self._retry is not None and self._retry.is_alive()):
            return
        self._retry = threading.Timer(seconds, self.reload_catalog)
        self._retry.daemon = True
        self._retry.start()

    def reload_catalog(self) -> None:
        assert self._source is not None
        with self._reload_lock, no_collection():
            source = self._source.load()
            self._take_directory(source.load, source.faults)
        self._retry_in(source.retry_in)
        self.on_catalog()

    def _take_directory(self, loaded: DirectoryLoad, faults: list[str]) -> None:
        for fault in faults:
            log.error("catalog fault; the last good content keeps serving", extra={"error": fault})
        errors, accepted = list(loaded.errors), []
        runtimes = [o for o in loaded.objects if isinstance(o, ServingRuntime)]
        with self.hold_decider() as decider:
            # What the webhook would refuse in a runtime never enters the catalog.
            refused = dict(zip(map(id, runtimes), catalog_refusals(decider, runtimes), strict=True))
        for obj in loaded.objects:
            refusals = refused.get(id(obj), [])
            errors.extend(f"{obj.kind}/{obj.meta.name}: {r.field}: {r.message}" for r in refusals)
            if not refusals:
                accepted.append(obj)
        for error in errors:
            log.warning("catalog manifest refused", extra={"error": error})
        for warning in loaded.warnings:
            log.warning("catalog manifest field", extra={"error": warning})
        with self._lock:
            self.catalog_faults = faults
            self.catalog_errors = [*faults, *errors]
            self._dir_objects = {key_of(o): o for o in accepted}
            self._dir_files = {key: file for key, file in loaded.files.items() if key in self._dir_objects}
            # A directory object that changed since an API change to it is the newer word: the API change ends.
            for key, override in list(self._overrides.items()):
                if self._dir_digest(key) != override.base:
                    del self._overrides[key]
                    log.info(
                        "the watched directory changed an object the API had changed; the directory's version serves",
                        extra={"object": "/".join(k for k in key if k), "file": self._dir_files.get(key, "")},
                    )
            self._publish()
            self.on_changes(dict(self._overrides))

    def take_cluster(
        self, kind: str, objects: Sequence[CatalogObject], deleted: Sequence[Key] = (), whole: bool = False
    ) -> list[Refusal]:
        """The cluster's word on objects of ``kind`` (policyd --cluster): ``objects`` are now so,
        ``deleted`` are gone and, when ``whole``, so is every object of the kind not in
        ``objects`` (a list). What the policy refuses in an object is kept out, its older
        version too (deciding on a version the cluster no longer has would be wrong), and
        returned. One catalog revision for the change, from the keys it touched."""
        runtimes = [o for o in objects if isinstance(o, ServingRuntime)]
        with self.hold_decider() as decider:
            judged = dict(zip(map(id, runtimes), catalog_refusals(decider, runtimes), strict=True))
        refused = []
        with self._lock:
            keys = set(deleted)
            if whole:
                keys.update(key for key in self._dir_objects if key[0] == kind)
            for key in keys:
                self._dir_objects.pop(key, None)
            for obj in objects:
                key = key_of(obj)
                keys.add(key)
                refusals = judged.get(id(obj), [])
                if refusals:
                    self._dir_objects.pop(key, None)
                    refused.append(Refusal(key, refusals[0].field, refusals[0].message))
                else:
                    self._dir_objects[key] = obj
            self._publish(keys)
        return refused

    def _dir_digest(self, key: Key) -> str | None:
        obj = self._dir_objects.get(key)
        return None if obj is None else obj.digest

    def _record(self, key: Key, override: Override) -> None:
        """Keep an API change; one that only restores the directory's object is no override."""
        if override.base is None and override.obj is None:
            self._overrides.pop(key, None)  # nothing in the directory to hide
        elif override.obj is not None and override.obj.digest == override.base:
            self._overrides.pop(key, None)
        else:
            self._overrides[key] = override

    def apply(self, objects: list[CatalogObject]) -> tuple[Catalog, list[Change]]:
        with self._lock:
            changes = self._apply(objects)
            self._publish(c.key for c in changes)
            self.on_changes(dict(self._overrides))
            return self._catalog, changes

    def delete(self, keys: list[Key]) -> tuple[Catalog, list[Change]]:
        with self._lock:
            changes = self._delete(keys)
            self._publish(c.key for c in changes)
            self.on_changes(dict(self._overrides))
            return self._catalog, changes

    def replace(self, objects: list[CatalogObject]) -> tuple[Catalog, list[Change]]:
        """The catalog becomes exactly ``objects``: they are applied and every other object is
        deleted, in one step (what a controller's audit of the cluster sends)."""
        with self._lock:
            keep = {key_of(o) for o in objects}
            gone = [k for k in map(key_of, self._catalog.objects()) if k not in keep]
            changes = self._apply(objects) + self._delete(gone)
            self._publish(c.key for c in changes)
            self.on_changes(dict(self._overrides))
            return self._catalog, changes

    def _apply(self, objects: list[CatalogObject]) -> list[Change]:
        """Callers hold the lock and publish."""
        changes = []
        for obj in objects:
            key = key_of(obj)
            current = self._served(key)
            action = "created" if current is None else "unchanged" if current.digest == obj.digest else "configured"
            if action != "unchanged":
                self._record(key, Override("applied", time.time(), obj, self._dir_digest(key)))
            changes.append(Change(key, action, self._dir_files.get(key, "")))
        return changes

    def _delete(self, keys: list[Key]) -> list[Change]:
        """Callers hold the lock and publish."""
        changes = []
        for key in keys:
            present = self._served(key) is not None
            if present:
                self._record(key, Override("deleted", time.time(), None, self._dir_digest(key)))
            changes.append(Change(key, "deleted" if present else "not_found", self._dir_files.get(key, "")))
        return changes

    def overrides(self) -> list[tuple[Key, Override, str]]:
        """The API changes in force over the directory's objects, with each one's file, by key."""
        with self._lock:
            return [(k, o, self._dir_files[k]) for k, o in sorted(self._overrides.items()) if k in self._dir_files]
