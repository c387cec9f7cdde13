"""Paths of the repository and of the shared data beside it (read in place, never copied),
and manifests printed in the spec pages."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "rules"
SHARED = Path(os.environ.get("POLICYD_SHARED") or REPO.parent / "shared").resolve()  # as tests/run.sh takes it
SPEC = SHARED / "spec"
CATALOG = SHARED / "data" / "ome-catalog"
HF_CONFIGS = SHARED / "data" / "hf-configs"
LWS_CRD = SHARED / "data" / "lws" / "leaderworkerset.x-k8s.io_leaderworkersets.v0.10.0.yaml"
CASES = SHARED / "conformance" / "cases"


def spec_manifest(page: str, kind: str, name: str) -> dict[str, Any]:
    """A manifest printed in a spec page (a block from ``apiVersion:`` to a blank line);
    ``page`` is the page's file name or its number prefix (``004``)."""
    (path,) = SPEC.glob(f"{page.removesuffix('.txt')}*.txt")
    for block in re.split(r"\n\s*\n", path.read_text()):
        if block.startswith("apiVersion:"):
            manifest: dict[str, Any] = yaml.safe_load(block)
            if manifest["kind"] == kind and manifest["metadata"]["name"] == name:
                return manifest
    raise LookupError(f"{path.name} prints no {kind} {name}")
