"""The directory watcher: a change made after the catalog was read but before the watch was in
place is still taken; a directory unchanged since it was read is not read again."""

from __future__ import annotations

import threading
from pathlib import Path

from policyd.catalog.source import CatalogSource
from policyd.daemon.watch import Watcher


def _read(root: Path) -> CatalogSource:
    (root / "a.yaml").write_text("kind: Other\n")
    source = CatalogSource(root)
    source.load()
    return source


def _watched(root: Path, source: CatalogSource, wait: float) -> bool:
    changed = threading.Event()
    watcher = Watcher(root, True, 0.05, changed.set, source.signature())
    watcher.start()
    try:
        return changed.wait(wait)
    finally:
        watcher.stop()
        watcher.join(5)


def test_a_change_before_the_watch_is_in_place_is_taken(tmp_path: Path) -> None:
    source = _read(tmp_path)
    (tmp_path / "a.yaml").write_text("kind: Other\nmetadata: {}\n")
    assert _watched(tmp_path, source, wait=10)


def test_a_directory_unchanged_since_it_was_read_is_not_read_again(tmp_path: Path) -> None:
    source = _read(tmp_path)
    assert not _watched(tmp_path, source, wait=1)
