"""Load catalog objects from a directory of manifests (multi-document YAML).

Reading YAML is most of a large catalog's start-up (about 1 ms a runtime: PyYAML builds the
objects in Python even with libyaml). So what each file parsed into is kept in a parse cache,
by the digest of the file's content and of the parser's own source, and files the cache has
not seen are parsed on every core. A file is read and hashed on every load; only its parsing
is saved."""

from __future__ import annotations

import gc
import hashlib
import logging
import multiprocessing
import os
import pickle
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from policyd.catalog.snapshot import CatalogObject
from policyd.errors import InvalidInput
from policyd.resources.manifests import is_ome_object, load_yaml, parse_object
from policyd.resources.objects import InferenceService

SUFFIXES = (".yaml", ".yml", ".json")
PARALLEL_FROM = 400  # files to parse before other processes are worth starting
_PATH = "\0path\0"  # where an error names its file, in the cache (one content may sit in several files)
log = logging.getLogger("policyd.catalog")


@dataclass(frozen=True)
class DirectoryLoad:
    objects: list[CatalogObject]
    errors: list[str]  # "file[#doc]: field: message"; a bad manifest never stops the rest


FileLoad = tuple[list[CatalogObject], list[str]]


def manifest_files(root: Path) -> list[Path]:
    """Files with a manifest suffix in every folder below ``root``, not through folder links
    (as rglob; os.walk lists 20,000 files several times faster)."""
    found: list[Path] = []
    for folder, _, names in os.walk(root):
        found.extend(Path(folder, n) for n in names if n.endswith(SUFFIXES) and os.path.isfile(os.path.join(folder, n)))
    return sorted(found)


def parse_file(text: str, where: str) -> FileLoad:
    """The catalog objects of one file's text and its errors (naming ``where``)."""
    objects: list[CatalogObject] = []
    errors: list[str] = []
    try:
        docs = load_yaml(text, where)
    except InvalidInput as err:
        return [], [str(err)]
    for i, doc in enumerate(docs):
        at = f"{where}#{i}" if len(docs) > 1 else where
        if not isinstance(doc, dict):
            errors.append(f"{at}: a manifest must be an object")
            continue
        # Kustomizations and other API groups share the directory; they are not catalog objects.
        if not is_ome_object(doc):
            continue
        try:
            obj = parse_object(doc)
        except InvalidInput as err:
            errors.append(f"{at}: {err}")
            continue
        if isinstance(obj, InferenceService):
            errors.append(f"{at}: kind: an InferenceService is not a catalog object")
            continue
        objects.append(obj)
    return objects, errors


def _parse_files(texts: list[str]) -> list[FileLoad]:
    return [parse_file(text, _PATH) for text in texts]


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


def _cache_file(cache_dir: Path, root: Path) -> Path:
    return cache_dir / f"catalog-{hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]}.pickle"


def _read_cache(path: Path | None) -> dict[str, FileLoad]:
    if path is None or not path.is_file():
        return {}
    try:
        with path.open("rb") as f:
            stored = pickle.load(f)
    except Exception as err:  # a damaged or foreign cache is only a slower start
        log.warning("catalog parse cache unreadable", extra={"file": str(path), "error": str(err)})
        return {}
    if not isinstance(stored, dict) or stored.get("parser") != parser_digest():
        return {}
    files = stored.get("files")
    return files if isinstance(files, dict) else {}


def _write_cache(path: Path, files: dict[str, FileLoad]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".catalog-", delete=False) as f:
            pickle.dump({"parser": parser_digest(), "files": files}, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(f.name, path)
    except OSError as err:
        log.warning("catalog parse cache not written", extra={"file": str(path), "error": str(err)})


def _parse_all(texts: list[str]) -> list[FileLoad]:
    """Parse on every core when there are enough files and this process runs one thread (as
    at start-up: forking copies only the calling thread, so a busy daemon parses here)."""
    workers = os.cpu_count() or 1
    if len(texts) < PARALLEL_FROM or workers < 2 or threading.active_count() > 1:
        return _parse_files(texts)
    chunk = max(50, len(texts) // (workers * 4))
    parts = [texts[i : i + chunk] for i in range(0, len(texts), chunk)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return [load for part in pool.map(_parse_files, parts) for load in part]


@contextmanager
def _no_collection() -> Iterator[None]:
    """Loading makes objects that all live on: collecting while it does is wasted time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_directory(root: Path, cache_dir: Path | None = None) -> DirectoryLoad:
    if not root.is_dir():
        return DirectoryLoad([], [f"{root}: catalog directory does not exist"])
    cache_path = _cache_file(cache_dir, root) if cache_dir is not None else None
    with _no_collection():
        files = manifest_files(root)
        texts, keys = [], []
        unreadable: list[str] = []
        for path in list(files):
            try:
                data = path.read_bytes()
            except OSError as err:  # gone since listed, or not ours to read
                unreadable.append(f"{path}: cannot read: {err.strerror}")
                files.remove(path)
                continue
            keys.append(hashlib.sha256(data).hexdigest())
            texts.append(data.decode("utf-8", errors="replace"))
        known = _read_cache(cache_path)
        todo = [i for i, key in enumerate(keys) if key not in known]
        fresh = dict(zip((keys[i] for i in todo), _parse_all([texts[i] for i in todo]), strict=True))
        objects: list[CatalogObject] = []
        errors: list[str] = unreadable
        for path, key in zip(files, keys, strict=True):
            found, failed = fresh.get(key) or known[key]
            objects.extend(found)
            errors.extend(e.replace(_PATH, str(path)) for e in failed)
    if cache_path is not None and (fresh or len(known) != len(set(keys))):
        _write_cache(cache_path, {key: fresh.get(key) or known[key] for key in keys})
    return DirectoryLoad(objects, errors)
