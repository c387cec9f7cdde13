"""Conformance case files: one YAML case per file, any directory, any file name."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from policyd import textfiles
from policyd.errors import InvalidInput

MAX_CASE_BYTES = 64 << 20
ACTIONS = ("select", "explain", "resolve", "render", "inspect-model")


@dataclass(frozen=True)
class Case:
    path: Path
    name: str
    objects: list[dict[str, Any]] = field(default_factory=list)
    request: dict[str, Any] = field(default_factory=dict)
    expect: dict[str, Any] = field(default_factory=dict)
    problem: str = ""  # why the case cannot be run; such a case counts as failed


def case_files(directories: list[Path]) -> list[Path]:
    files: list[Path] = []
    for directory in directories:
        if directory.is_file():
            files.append(directory)
        else:
            files.extend(sorted(p for p in directory.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()))
    return files


def load_case(path: Path) -> Case:
    try:
        doc = yaml.safe_load(textfiles.read_text(path, MAX_CASE_BYTES))
    except InvalidInput as err:  # unreadable, too large, or not UTF-8: the loader's words, without the path again
        return Case(path, path.stem, problem=err.message)
    except yaml.YAMLError as err:
        return Case(path, path.stem, problem=f"cannot read: {err}")
    if not isinstance(doc, dict):
        return Case(path, path.stem, problem="not a case: the file is not a mapping")
    name = str(doc.get("name") or path.stem)
    request, expect, objects = doc.get("request"), doc.get("expect"), doc.get("objects") or []
    if not isinstance(request, dict) or request.get("action") not in ACTIONS:
        action = request.get("action") if isinstance(request, dict) else None
        return Case(path, name, problem=f"cannot run: unknown request.action {action!r} (one of {', '.join(ACTIONS)})")
    if not isinstance(expect, dict) or not expect:
        return Case(path, name, problem="cannot run: no expect")
    if not isinstance(objects, list) or not all(isinstance(o, dict) for o in objects):
        return Case(path, name, problem="cannot run: objects must be a list of manifests")
    return Case(path, name, objects, request, expect)
