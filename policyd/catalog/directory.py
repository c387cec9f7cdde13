"""Load catalog objects from a directory of manifests (multi-document YAML)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from policyd.catalog.snapshot import CatalogObject, Key, key_of
from policyd.errors import InvalidInput
from policyd.resources.manifests import is_ome_object, load_yaml, parse_object
from policyd.resources.schema import unknown_fields

SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class DirectoryLoad:
    objects: list[CatalogObject]
    errors: list[str]  # "file[#doc]: field: message"; a bad manifest never stops the rest
    files: dict[Key, str]  # the file each object came from
    warnings: list[str]  # 'file[#doc]: unknown field "spec.modle"': the object still loads


def manifest_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in SUFFIXES)


def load_directory(root: Path) -> DirectoryLoad:
    objects: list[CatalogObject] = []
    errors: list[str] = []
    files: dict[Key, str] = {}
    warnings: list[str] = []
    if not root.is_dir():
        return DirectoryLoad([], [f"{root}: catalog directory does not exist"], {}, [])
    for path in manifest_files(root):
        try:
            docs = load_yaml(path.read_text(), str(path))
        except InvalidInput as err:
            errors.append(str(err))
            continue
        for i, doc in enumerate(docs):
            where = f"{path}#{i}" if len(docs) > 1 else str(path)
            if not isinstance(doc, dict):
                errors.append(f"{where}: a manifest must be an object")
                continue
            # Kustomizations and other API groups share the directory; they are not catalog objects.
            if not is_ome_object(doc):
                continue
            try:
                obj = parse_object(doc)
            except InvalidInput as err:
                errors.append(f"{where}: {err}")
                continue
            objects.append(obj)
            files[key_of(obj)] = str(path)
            warnings.extend(f'{where}: unknown field "{field}"' for field in unknown_fields(doc))
    return DirectoryLoad(objects, errors, files, warnings)
