"""Load catalog objects from a directory of manifests (multi-document YAML), file by file.

Reading YAML is most of a large catalog's start-up (about 1 ms a runtime: PyYAML builds the
objects in Python even with libyaml). So what each file's text parsed into is kept in a parse
cache (``ParseCache``), by the digest of the text and of the parser's own source, and texts the
cache has not seen are parsed on every core. A file is read and hashed on every load; only its
parsing is saved."""

from __future__ import annotations

import errno
import gc
import hashlib
import logging
import multiprocessing
import os
import pickle
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from policyd import textfiles
from policyd.catalog.private_files import Untrusted, check_directory, open_private
from policyd.catalog.snapshot import CatalogObject, Key, key_of
from policyd.errors import InvalidInput
from policyd.pickling import ByConstructor
from policyd.resources.manifests import is_ome_object, load_yaml, parse_object
from policyd.resources.objects import SPEC_FIELDS, ServingRuntime
from policyd.resources.schema import unknown_fields

SUFFIXES = (".yaml", ".yml", ".json")
MAX_FILE_BYTES = 64 << 20
PARALLEL_FROM = 400  # texts to parse before other processes are worth starting
_PATH = "\0path\0"  # where a parsed text's messages name its file (one content may sit in several files)
log = logging.getLogger("policyd.catalog")


@dataclass
class DirectoryLoad:
    objects: list[CatalogObject] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # "file[#doc]: field: message"; a bad manifest never stops the rest
    files: dict[Key, str] = field(default_factory=dict)  # the file each object came from
    warnings: list[str] = field(default_factory=list)  # 'file[#doc]: unknown field "spec.modle"': the object loads

    def extend(self, other: DirectoryLoad) -> None:
        self.objects.extend(other.objects)
        self.errors.extend(other.errors)
        self.files.update(other.files)
        self.warnings.extend(other.warnings)


def walk(root: Path) -> tuple[list[Path], list[str]]:
    """The manifest files under ``root`` (symlinks followed, each directory once), and what
    could not be walked: a symlink loop, a directory that cannot be listed, an entry that cannot
    be examined. A dangling symlink is skipped, as a missing file is."""
    files: list[Path] = []
    faults: list[str] = []
    seen: dict[tuple[int, int], Path] = {}
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            st = os.stat(directory)
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as err:
            faults.append(f"{directory}: cannot list the directory: {err.strerror}")
            continue
        if (st.st_dev, st.st_ino) in seen:
            faults.append(f"{directory}: symlink loop (leads back to {seen[(st.st_dev, st.st_ino)]})")
            continue
        seen[(st.st_dev, st.st_ino)] = directory
        for entry in entries:
            path = Path(entry.path)
            try:
                is_dir, is_file = entry.is_dir(), entry.is_file()
            except OSError as err:
                reason = "symlink loop" if err.errno == errno.ELOOP else f"cannot examine: {err.strerror}"
                faults.append(f"{path}: {reason}")
                continue
            if is_dir:
                stack.append(path)
            elif is_file and path.suffix in SUFFIXES:
                files.append(path)
    return sorted(files), faults


def read_text(path: Path) -> str:
    """A manifest file's text; InvalidInput (naming the file) when it cannot be read, is too
    large, or is not UTF-8."""
    return textfiles.read_text(path, MAX_FILE_BYTES)


def parse_documents(path: str, docs: list[object]) -> DirectoryLoad:
    """The catalog objects of one file's documents; each bad manifest is an error of its own."""
    out = DirectoryLoad()
    for i, doc in enumerate(docs):
        where = f"{path}#{i}" if len(docs) > 1 else path
        if not isinstance(doc, dict):
            out.errors.append(f"{where}: a manifest must be an object")
            continue
        # Kustomizations and other API groups share the directory; they are not catalog objects.
        if not is_ome_object(doc):
            continue
        try:
            obj = parse_object(doc)
        except InvalidInput as err:
            out.errors.append(f"{where}: {err}")
            continue
        out.objects.append(obj)
        out.files[key_of(obj)] = path
        out.warnings.extend(f'{where}: unknown field "{name}"' for name in unknown_fields(doc))
    return out


@dataclass(frozen=True, slots=True)
class Parsed(ByConstructor):
    """What one file's text parsed into, its path left out (one content may sit in several
    files): tuples, as a catalog keeps one for each of its files."""

    objects: tuple[CatalogObject, ...] = ()
    errors: tuple[str, ...] = ()  # naming _PATH
    warnings: tuple[str, ...] = ()  # naming _PATH
    refused: str | None = None  # why the text as a whole does not parse

    def sharing(self, shapes: dict[str, ServingRuntime]) -> Parsed:
        """This parse, each runtime holding the spec's objects of the first runtime of its shape
        in ``shapes`` (which it joins when first): runtimes of one shape parse into equal objects,
        and a catalog of team copies and model families has many of a shape."""
        objects = []
        for obj in self.objects:
            if isinstance(obj, ServingRuntime):
                first = shapes.setdefault(obj.shape, obj)
                if first is not obj:
                    obj = replace(obj, **{name: getattr(first, name) for name in SPEC_FIELDS})
            objects.append(obj)
        return replace(self, objects=tuple(objects))

    def check(self, path: Path | str) -> None:
        """InvalidInput naming the file at ``path`` when the text does not parse as a whole
        (then the field: ``x.yaml: spec.x: …``)."""
        if self.refused is not None:
            raise InvalidInput(str(path), self.refused)

    def at(self, path: Path | str) -> DirectoryLoad:
        """The load of the file at ``path`` (InvalidInput as ``check``)."""
        self.check(path)
        where = str(path)
        return DirectoryLoad(
            list(self.objects),
            [e.replace(_PATH, where) for e in self.errors],
            {key_of(o): where for o in self.objects},
            [w.replace(_PATH, where) for w in self.warnings],
        )


def parse_text(text: str) -> Parsed:
    try:
        docs = list(load_yaml(text, ""))
    except InvalidInput as err:
        return Parsed(refused=str(err))
    load = parse_documents(_PATH, docs)
    return Parsed(tuple(load.objects), tuple(load.errors), tuple(load.warnings))


def _parse_texts(texts: list[str]) -> list[Parsed]:
    return [parse_text(text) for text in texts]


def _parse_all(texts: list[str]) -> list[Parsed]:
    """Parse on every core when there are enough texts and this process runs one thread (as
    at start-up: forking copies only the calling thread, so a busy daemon parses here)."""
    workers = os.cpu_count() or 1
    if len(texts) < PARALLEL_FROM or workers < 2 or threading.active_count() > 1:
        return _parse_texts(texts)
    chunk = max(50, len(texts) // (workers * 4))
    parts = [texts[i : i + chunk] for i in range(0, len(texts), chunk)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return [parsed for part in pool.map(_parse_texts, parts) for parsed in part]


@cache
def parser_digest() -> str:
    """A digest of the code that turns a file into objects: a cache made by other code is not used."""
    h = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]
    for folder in ("resources", "semantics"):
        for path in sorted((package / folder).glob("*.py")):
            h.update(path.read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:16]


def digest_of(text: str) -> str:
    return hashlib.sha256(text.encode(errors="surrogatepass")).hexdigest()


Stamp = tuple[int, int, int, int]  # a file's mtime_ns, size, inode and device
RACY_NS = 2_000_000_000  # a file changed this close to its reading may change again unseen in its stamp


class ParseCache:
    """What texts parsed into, by their digest; kept in ``cache_dir`` (one file per catalog
    directory) between runs when given. A damaged or foreign cache file is only a slower start.

    It also keeps the digest each file had at its stamp when read, so a start-up need not read
    a file whose stamp is unchanged (as a running daemon does not). Only stamps of files that had
    not changed for RACY_NS when read are kept: a file written within its clock's tick of its
    reading could change again and keep its stamp (git's "racy" files)."""

    def __init__(self, cache_dir: Path | None, root: Path) -> None:
        name = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
        self.path = cache_dir / f"catalog-{name}.pickle" if cache_dir is not None else None
        if cache_dir is not None:
            try:
                check_directory(cache_dir)  # a pickle runs its writer's code: only this user's are read
            except Untrusted as err:
                log.warning("catalog parse cache not used", extra={"directory": str(cache_dir), "error": str(err)})
                self.path = None
        with no_collection():
            self._known, self._stamps = self._read()
        self._stored = (set(self._known), dict(self._stamps))

    def _read(self) -> tuple[dict[str, Parsed], dict[str, tuple[Stamp, str]]]:
        if self.path is None or not self.path.exists():
            return {}, {}
        try:
            with open_private(self.path) as f:
                stored = pickle.load(f)
        except Exception as err:  # anything unpickling can raise, or Untrusted: the cache is only an optimisation
            log.warning("catalog parse cache unreadable", extra={"file": str(self.path), "error": str(err)})
            return {}, {}
        if not isinstance(stored, dict) or stored.get("parser") != parser_digest():
            return {}, {}
        files, stamps = stored.get("files"), stored.get("stamps")
        return (files if isinstance(files, dict) else {}), (stamps if isinstance(stamps, dict) else {})

    def parse(self, texts: Sequence[str]) -> list[tuple[str, Parsed]]:
        """Each text's digest and what it parsed into."""
        digests = [digest_of(t) for t in texts]
        todo = {d: t for d, t in zip(digests, texts, strict=True) if d not in self._known}
        if todo:
            with no_collection():
                shapes = self._shapes()
                fresh = [p.sharing(shapes) for p in _parse_all(list(todo.values()))]
                self._known.update(zip(todo, fresh, strict=True))
        return [(d, self._known[d]) for d in digests]

    def _shapes(self) -> dict[str, ServingRuntime]:
        """A runtime of each shape the cache holds, whose spec's objects the others share."""
        return {o.shape: o for p in self._known.values() for o in p.objects if isinstance(o, ServingRuntime)}

    def by_stamp(self, path: Path, stamp: Stamp) -> tuple[str, Parsed] | None:
        """The digest and parse of the file at ``path`` when it was read at this very stamp."""
        seen = self._stamps.get(str(path))
        if seen is None or seen[0] != stamp or seen[1] not in self._known:
            return None
        return seen[1], self._known[seen[1]]

    def note(self, path: Path, stamp: Stamp, digest: str, read_at_ns: int) -> None:
        """That the file at ``path`` held the text ``digest`` at ``stamp``, as read at ``read_at_ns``."""
        if read_at_ns - stamp[0] > RACY_NS:
            self._stamps[str(path)] = (stamp, digest)
        else:
            self._stamps.pop(str(path), None)

    def keep(self, live: dict[str, str]) -> None:
        """Forget what no file holds now (``live``: each file's digest, by its path), and store
        the rest when it changed."""
        digests = set(live.values())
        for digest in [d for d in self._known if d not in digests]:
            del self._known[digest]
        for path in [p for p in self._stamps if p not in live]:
            del self._stamps[path]
        if self.path is None or (set(self._known), self._stamps) == self._stored:
            return
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.path.parent, prefix=".catalog-", delete=False) as f:
                stored = {"parser": parser_digest(), "files": self._known, "stamps": self._stamps}
                pickle.dump(stored, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(f.name, self.path)
            self._stored = (set(self._known), dict(self._stamps))
        except OSError as err:
            log.warning("catalog parse cache not written", extra={"file": str(self.path), "error": str(err)})


@contextmanager
def no_collection() -> Iterator[None]:
    """Loading makes objects that all live on: collecting while it does is wasted time (at
    20,000 runtimes, full passes over what was just made)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
