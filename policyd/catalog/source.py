"""The watched catalog directory across changes: each file's last good content.

A change to a file is taken once the file is whole: unchanged for ``settle`` seconds (a file
written in place is read between its truncation and its last write otherwise; write-then-rename
is whole at once) and the same size and time after it was read as before. A file that is being
written keeps serving what it held, and the load says to look again (``retry_in``). A file that
cannot be read or parsed as a whole — permissions, a symlink loop, bytes that are not UTF-8 or
not YAML, a value JSON cannot carry — keeps serving its last good content and is reported as a
fault; so does the whole catalog when the directory itself is gone. Start-up reads every file as
it is (nothing to keep serving yet) and reports the same faults."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from policyd.catalog.directory import DirectoryLoad, documents, parse_documents, read_text, walk
from policyd.errors import InvalidInput

SETTLE_SECONDS = 0.5
Stamp = tuple[int, int, int, int]  # mtime_ns, size, inode, device


@dataclass
class SourceLoad:
    load: DirectoryLoad
    faults: list[str] = field(default_factory=list)  # what keeps its last good content, and why
    retry_in: float = 0.0  # > 0: a file was being written; load again after this many seconds


def _stamp(path: Path) -> Stamp:
    st = os.stat(path)
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)


class CatalogSource:
    def __init__(self, root: Path, settle: float = SETTLE_SECONDS) -> None:
        self.root = root
        self.settle = settle
        self._files: dict[Path, tuple[Stamp, DirectoryLoad]] = {}
        self._loaded_once = False

    def _kept(self, path: Path) -> DirectoryLoad | None:
        seen = self._files.get(path)
        return seen[1] if seen is not None else None

    def load(self) -> SourceLoad:
        first, self._loaded_once = not self._loaded_once, True
        if not self.root.is_dir():
            if first:
                return SourceLoad(DirectoryLoad(errors=[f"{self.root}: catalog directory does not exist"]))
            out = SourceLoad(DirectoryLoad())
            for _, content in self._files.values():
                out.load.extend(content)
            out.faults.append(f"{self.root}: the catalog directory is gone; its last good content keeps serving")
            return out
        paths, faults = walk(self.root)
        out = SourceLoad(DirectoryLoad(), faults)
        now = time.time_ns()
        files: dict[Path, tuple[Stamp, DirectoryLoad]] = {}
        for path in paths:
            kept = self._kept(path)
            try:
                before = _stamp(path)
            except OSError as err:
                out.faults.append(f"{path}: cannot examine: {err.strerror}")
                self._keep(path, kept, files, out)
                continue
            if kept is not None and self._files[path][0] == before:
                files[path] = self._files[path]
                out.load.extend(kept)
                continue
            age = (now - before[0]) / 1e9
            if not first and age < self.settle:
                out.retry_in = max(out.retry_in, self.settle - age)
                self._keep(path, kept, files, out)
                continue
            try:
                text = read_text(path)
                if _stamp(path) != before:  # written to while it was read
                    out.retry_in = max(out.retry_in, self.settle)
                    self._keep(path, kept, files, out)
                    continue
                loaded = parse_documents(path, documents(path, text))
            except (InvalidInput, OSError) as err:
                kept_note = "; its last good content keeps serving" if kept is not None else ""
                out.faults.append(f"{err}{kept_note}")
                self._keep(path, kept, files, out)
                continue
            files[path] = (before, loaded)
            out.load.extend(loaded)
        self._files = files
        return out

    def _keep(
        self, path: Path, kept: DirectoryLoad | None, files: dict[Path, tuple[Stamp, DirectoryLoad]], out: SourceLoad
    ) -> None:
        if kept is not None:
            files[path] = self._files[path]
            out.load.extend(kept)
