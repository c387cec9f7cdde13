"""A catalog directory loaded once, as policyd's CatalogSource loads it at start (its faults
among the errors): tests and benchmarks that want a directory's objects."""

from __future__ import annotations

from pathlib import Path

from policyd.catalog.directory import DirectoryLoad
from policyd.catalog.source import CatalogSource


def load_directory(root: Path) -> DirectoryLoad:
    source = CatalogSource(root, settle=0).load()
    source.load.errors[:0] = source.faults
    return source.load
