"""Watch a directory for changes with watchfiles (the Rust notify crate: inotify on Linux),
so an idle daemon does no work however many files the directory holds — polling a catalog of
20,000 files every second took 41 % of a core. Where the platform cannot notify, watchfiles
polls instead."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import watchfiles

from policyd.catalog.directory import walk
from policyd.catalog.source import Signature

log = logging.getLogger("policyd.watch")


def signature(root: Path, recursive: bool) -> Signature:
    """Every file's path, time and size: taken when watching starts, to see what changed
    before the watch was in place."""
    if not root.is_dir():
        return ()
    try:
        # the catalog's own walk: symlink loops and unlistable directories are the loader's to report
        paths = walk(root)[0] if recursive else list(root.iterdir())
    except OSError:
        return ()
    out = []
    for p in paths:
        try:
            st = p.stat()
        except OSError:  # gone, or unreadable: the loader reports it
            continue
        if p.is_file():
            out.append((str(p), st.st_mtime_ns, st.st_size))
    return tuple(sorted(out))


class Watcher(threading.Thread):
    """Calls ``on_change`` whenever files in the directory change (added, modified, removed),
    once per burst of changes: changes within ``interval`` seconds are taken together. ``seen``
    is the directory as its reader last found it, when the reader knows (a catalog of 20,000
    files takes most of a second to look at again); otherwise it is looked at here."""

    def __init__(
        self,
        root: Path,
        recursive: bool,
        interval: float,
        on_change: Callable[[], object],
        seen: Signature | None = None,
    ) -> None:
        super().__init__(name=f"watch:{root}", daemon=True)
        self.root, self.recursive, self.interval, self.on_change = root, recursive, interval, on_change
        self._stopping = threading.Event()
        self._existed = root.is_dir()
        # until the watch is in place
        self._seen: Signature | None = signature(root, recursive) if seen is None else seen

    def run(self) -> None:
        existed = self._existed
        while not self._stopping.is_set():
            if not self.root.is_dir():
                if existed:
                    # gone, or now a symlink loop: the reader says so (a refused reload, a catalog fault)
                    self._changed()
                # nothing to watch yet (or any more): look again until it is there
                self._stopping.wait(self.interval)
                existed = False
                continue
            if not existed:
                existed = True
                self._changed()
            try:
                self._watch()
            except (FileNotFoundError, OSError, RuntimeError) as err:
                log.warning("watch interrupted", extra={"directory": str(self.root), "error": str(err)})
                self._stopping.wait(self.interval)

    def _watch(self) -> None:
        step = max(10, int(self.interval * 1000))
        changes = watchfiles.watch(
            self.root,
            watch_filter=None,
            debounce=step,
            step=min(step, 50),
            stop_event=self._stopping,
            recursive=self.recursive,
            rust_timeout=200,
            yield_on_timeout=True,
            raise_interrupt=False,
        )
        for batch in changes:
            if self._seen is not None:
                # the watch is in place: anything changed since the daemon read the directory?
                before, self._seen = self._seen, None
                if not batch and signature(self.root, self.recursive) != before:
                    batch = {(watchfiles.Change.modified, str(self.root))}
            if batch:
                self._changed()
            if not self.root.is_dir():
                return

    def _changed(self) -> None:
        try:
            self.on_change()
        except Exception:  # a watcher must never die; the error is logged and the next change retried
            log.exception("reload failed", extra={"directory": str(self.root)})

    def stop(self) -> None:
        self._stopping.set()
