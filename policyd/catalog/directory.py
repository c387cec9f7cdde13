"""Load catalog objects from a directory of manifests (multi-document YAML), file by file."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

from policyd.catalog.snapshot import CatalogObject, Key, key_of
from policyd.errors import InvalidInput
from policyd.resources.manifests import is_ome_object, load_yaml, parse_object
from policyd.resources.schema import unknown_fields

SUFFIXES = (".yaml", ".yml", ".json")
MAX_FILE_BYTES = 64 << 20


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
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise InvalidInput(str(path), f"cannot read: {err.strerror or err}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InvalidInput(str(path), f"more than the limit of {MAX_FILE_BYTES:,} bytes")
    try:
        return data.decode()
    except UnicodeDecodeError as err:
        raise InvalidInput(str(path), f"not UTF-8: byte {data[err.start]:#04x} at offset {err.start}") from None


def parse_documents(path: Path, docs: list[object]) -> DirectoryLoad:
    """The catalog objects of one file's documents; each bad manifest is an error of its own."""
    out = DirectoryLoad()
    for i, doc in enumerate(docs):
        where = f"{path}#{i}" if len(docs) > 1 else str(path)
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
        out.files[key_of(obj)] = str(path)
        out.warnings.extend(f'{where}: unknown field "{name}"' for name in unknown_fields(doc))
    return out


def documents(path: Path, text: str) -> list[object]:
    """A file's documents; InvalidInput naming the file (then the field: ``x.yaml: spec.x: …``)."""
    try:
        return list(load_yaml(text, ""))
    except InvalidInput as err:
        raise InvalidInput(str(path), str(err)) from None


def load_file(path: Path) -> DirectoryLoad:
    """One file; InvalidInput when the file as a whole cannot be read or parsed."""
    return parse_documents(path, documents(path, read_text(path)))


def load_directory(root: Path) -> DirectoryLoad:
    """Every file under ``root`` once, as it is now (policyd.catalog.source keeps files' last good
    content across changes)."""
    if not root.is_dir():
        return DirectoryLoad(errors=[f"{root}: catalog directory does not exist"])
    files, faults = walk(root)
    out = DirectoryLoad(errors=faults)
    for path in files:
        try:
            out.extend(load_file(path))
        except InvalidInput as err:
            out.errors.append(str(err))
    return out
