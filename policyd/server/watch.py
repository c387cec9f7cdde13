"""Poll a directory for changes. Polling keeps the daemon free of platform
notification APIs and is cheap at the sizes involved."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from policyd.catalog.directory import walk

log = logging.getLogger("policyd.watch")
Signature = tuple[tuple[str, int, int], ...]


def signature(root: Path, recursive: bool) -> Signature:
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
    """Calls ``on_change`` whenever the directory's files change (names, sizes or times)."""

    def __init__(self, root: Path, recursive: bool, interval: float, on_change: Callable[[], object]) -> None:
        super().__init__(name=f"watch:{root}", daemon=True)
        self.root, self.recursive, self.interval, self.on_change = root, recursive, interval, on_change
        self._stop = threading.Event()
        self._seen = signature(root, recursive)

    def run(self) -> None:
        while not self._stop.wait(self.interval):
            current = signature(self.root, self.recursive)
            if current != self._seen:
                self._seen = current
                try:
                    self.on_change()
                except Exception:  # a watcher must never die; the error is logged and the next change retried
                    log.exception("reload failed", extra={"directory": str(self.root)})

    def stop(self) -> None:
        self._stop.set()
