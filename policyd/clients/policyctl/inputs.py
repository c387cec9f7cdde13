"""Manifests from -f as kubectl reads them: files, directories (-R: recursively), ``-`` for
stdin; a namespaced manifest without a namespace goes to -n's (else ``default``), and one whose
namespace contradicts -n is refused with kubectl's message. Every command takes OME's catalog
kinds only, so a document of another kind (a ConfigMap) is refused here, by its kind and file."""

from __future__ import annotations

import os
import select
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policyd import textfiles
from policyd.clients.policyctl.kinds import CATALOG_KINDS, by_kind
from policyd.clients.policyctl.origins import Origin, Origins
from policyd.errors import InvalidInput
from policyd.resources.manifests import DEFAULT_NAMESPACE, load_yaml
from policyd.resources.safe_yaml import YamlRefused

SUFFIXES = (".yaml", ".yml", ".json")
MAX_FILE_BYTES = 64 << 20  # as policyd's watched catalog directory takes a file


class InputError(Exception):
    """Input policyctl cannot send: a missing file, a document that is no manifest, a namespace
    contradiction. The message is the whole line after ``error: ``."""


@dataclass(frozen=True)
class Document:
    manifest: dict[str, Any]
    source: str  # file name, with #N for the N-th document of a multi-document file

    @property
    def kind(self) -> str:
        return str(self.manifest.get("kind") or "")

    @property
    def name(self) -> str:
        meta = self.manifest.get("metadata")
        return str(meta.get("name") or "") if isinstance(meta, dict) else ""

    @property
    def origin(self) -> Origin:
        return Origin(self.source, f'{self.kind} "{self.name}"' if self.name else self.kind)


def sent_as(origins: Origins, path: str, docs: list[Document]) -> None:
    """``docs`` are the request's list at ``path`` (``objects``: ``objects[0]`` is the first)."""
    for i, doc in enumerate(docs):
        origins.add(f"{path}[{i}]", doc.origin)


def _files(path: Path, recursive: bool) -> list[Path]:
    if str(path) == "-":
        return [path]
    if not path.exists():
        raise InputError(f'the path "{path}" does not exist')
    if path.is_dir():
        found = path.rglob("*") if recursive else path.iterdir()
        return sorted(p for p in found if p.is_file() and p.suffix in SUFFIXES)
    return [path]


def read_text(path: Path) -> str:
    """A file's text (``-``: stdin's), or the one line that says why it cannot be read: as policyd's
    catalog loader says it (``x.yaml: not UTF-8: byte 0xff at offset 6``)."""
    try:
        return _read_stdin() if str(path) == "-" else textfiles.read_text(path, MAX_FILE_BYTES)
    except InvalidInput as err:
        raise InputError(str(err)) from None


def _read_stdin() -> str:
    """All of stdin, waited for in short slices: gRPC's threads are running by now, and a Ctrl-C
    the kernel hands to one of them never wakes a main thread blocked in read(2), so the main
    thread must come back to the interpreter often enough to raise KeyboardInterrupt."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        raise InputError("cannot read the standard input: it is closed") from None
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    return textfiles.decoded(b"".join(chunks), "the standard input")


def _catalog_kind(doc: Document) -> None:
    if by_kind(doc.kind) is None:
        what = (doc.kind + (f' "{doc.name}"' if doc.name else "")) if doc.kind else "an object without kind"
        known = ", ".join(k.name for k in CATALOG_KINDS)
        raise InputError(f"{doc.source}: {what} is not a kind policyd takes (it takes {known})")


def namespace_of(manifest: dict[str, Any], namespace: str | None) -> None:
    """Put a namespaced manifest in ``namespace`` (-n, None when not given; else ``default``)."""
    kind = by_kind(str(manifest.get("kind") or ""))
    if kind is not None and not kind.namespaced:
        return  # cluster scope: kubectl ignores -n for these too
    meta = manifest.get("metadata")
    if not isinstance(meta, dict):
        return  # the daemon names the missing metadata
    written = meta.get("namespace")
    if written and namespace is not None and written != namespace:
        raise InputError(
            f'the namespace from the provided object "{written}" does not match the namespace "{namespace}". '
            f"You must pass '--namespace={written}' to perform this operation."
        )
    if not written:
        meta["namespace"] = namespace or DEFAULT_NAMESPACE


def _at(file: Path, err: YamlRefused) -> str:
    """A YAML error as compilers and editors point at a place: FILE:LINE:COLUMN: what is wrong."""
    if not err.line:
        return str(err)
    return f"{file}:{err.line}{f':{err.column}' if err.column else ''}: {err.problem}"


def read(paths: list[Path], namespace: str | None, recursive: bool = False) -> list[Document]:
    docs: list[Document] = []
    for path in paths:
        for file in _files(path, recursive):
            try:
                loaded = load_yaml(read_text(file), str(file))
            except YamlRefused as err:
                raise InputError(_at(file, err)) from None
            except InvalidInput as err:
                raise InputError(str(err)) from None
            for i, manifest in enumerate(loaded):
                source = f"{file}#{i}" if len(loaded) > 1 else str(file)
                if not isinstance(manifest, dict):
                    raise InputError(f"{source}: a manifest must be an object")
                doc = Document(manifest, source)
                _catalog_kind(doc)
                namespace_of(manifest, namespace)
                docs.append(doc)
    return docs
