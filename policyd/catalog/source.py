"""The watched catalog directory across changes: each file's last good content.

A change to a file is taken once the file is whole: unchanged for ``settle`` seconds (a file
written in place is read between its truncation and its last write otherwise; write-then-rename
is whole at once) and the same size and time after it was read as before. A file that is being
written keeps serving what it held, and the load says to look again (``retry_in``). A file that
cannot be read or parsed as a whole — permissions, a symlink loop, bytes that are not UTF-8 or
not YAML, a value JSON cannot carry — keeps serving its last good content and is reported as a
fault; so does the whole catalog when the directory itself is gone. Start-up reads every file as
it is (nothing to keep serving yet) and reports the same faults. The files read in one load are
parsed together, through the parse cache (policyd.catalog.directory)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from policyd.catalog.directory import DirectoryLoad, ParseCache, Parsed, Stamp, read_text, walk
from policyd.errors import InvalidInput

SETTLE_SECONDS = 0.5
Signature = tuple[tuple[str, int, int], ...]  # each file's path, mtime_ns and size, by path


@dataclass(frozen=True, slots=True)
class _File:
    stamp: Stamp
    parsed: Parsed  # what the parse cache holds for its text
    digest: str  # of the text it was parsed from


@dataclass
class SourceLoad:
    load: DirectoryLoad
    faults: list[str] = field(default_factory=list)  # what keeps its last good content, and why
    retry_in: float = 0.0  # > 0: a file was being written; load again after this many seconds


def _stamp(path: Path) -> Stamp:
    st = os.stat(path)
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)


class CatalogSource:
    def __init__(self, root: Path, settle: float = SETTLE_SECONDS, parse_cache: Path | None = None) -> None:
        self.root = root
        self.settle = settle
        self._files: dict[str, _File] = {}  # by path (a path's text: its Path object is four times the size)
        self._loaded_once = False
        self._parse_cache = ParseCache(parse_cache, root)

    def load(self) -> SourceLoad:
        first, self._loaded_once = not self._loaded_once, True
        if not self.root.is_dir():
            if first:
                return SourceLoad(DirectoryLoad(errors=[f"{self.root}: catalog directory does not exist"]))
            out = SourceLoad(DirectoryLoad())
            for name, kept in self._files.items():
                out.load.extend(kept.parsed.at(name))
            out.faults.append(f"{self.root}: the catalog directory is gone; its last good content keeps serving")
            return out
        paths, faults = walk(self.root)
        out = SourceLoad(DirectoryLoad(), faults)
        now = time.time_ns()
        files: dict[str, _File] = {}
        read: list[tuple[Path, Stamp, str]] = []  # to parse, together
        for path in paths:
            seen = self._files.get(str(path))
            try:
                before = _stamp(path)
            except OSError as err:
                out.faults.append(f"{path}: cannot examine: {err.strerror}")
                self._keep(path, files)
                continue
            if seen is not None and seen.stamp == before:
                files[str(path)] = seen
                continue
            if seen is None and (cached := self._parse_cache.by_stamp(path, before)) is not None:
                self._take(path, before, *cached, files, out)
                continue
            age = (now - before[0]) / 1e9
            if not first and age < self.settle:
                out.retry_in = max(out.retry_in, self.settle - age)
                self._keep(path, files)
                continue
            try:
                text = read_text(path)
                if _stamp(path) != before:  # written to while it was read
                    out.retry_in = max(out.retry_in, self.settle)
                    self._keep(path, files)
                    continue
            except (InvalidInput, OSError) as err:
                self._fault(path, err, files, out)
                continue
            read.append((path, before, text))
        parsed = self._parse_cache.parse([text for _, _, text in read])
        for (path, before, _), (digest, found) in zip(read, parsed, strict=True):
            self._parse_cache.note(path, before, digest, now)
            self._take(path, before, digest, found, files, out)
        for path in paths:  # in the walk's order, whatever was parsed
            if (name := str(path)) in files:
                out.load.extend(files[name].parsed.at(name))
        self._files = files
        self._parse_cache.keep({name: f.digest for name, f in files.items()})
        return out

    def signature(self) -> Signature:
        """The files as the last load found them (what a watcher compares the directory with
        once its watch is in place)."""
        return tuple(sorted((name, f.stamp[0], f.stamp[1]) for name, f in self._files.items()))

    def _take(
        self, path: Path, stamp: Stamp, digest: str, found: Parsed, files: dict[str, _File], out: SourceLoad
    ) -> None:
        try:
            found.check(path)
        except InvalidInput as err:
            self._fault(path, err, files, out)
        else:
            files[str(path)] = _File(stamp, found, digest)

    def _fault(self, path: Path, err: Exception, files: dict[str, _File], out: SourceLoad) -> None:
        kept_note = "; its last good content keeps serving" if str(path) in self._files else ""
        out.faults.append(f"{err}{kept_note}")
        self._keep(path, files)

    def _keep(self, path: Path, files: dict[str, _File]) -> None:
        kept = self._files.get(str(path))
        if kept is not None:
            files[str(path)] = kept
