"""Catalog objects as policyd takes them from the cluster: shared by the controller, which keeps
policyd's catalog in sync, and the webhook, which sends what a review did not find there."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

Manifest = Mapping[str, Any]
Item = tuple[str, str]  # (manifest as policyd takes it, its digest)


def catalog_item(obj: Manifest) -> Item:
    """The object as policyd takes it: status, managed fields, resourceVersion and generation are
    the cluster's bookkeeping, not catalog content (an InferenceService's status changes with every
    condition we write)."""
    body = {k: v for k, v in obj.items() if k != "status"}
    body["metadata"] = {
        k: v
        for k, v in (obj.get("metadata") or {}).items()
        if k not in ("managedFields", "resourceVersion", "generation")
    }
    manifest = json.dumps(body, sort_keys=True)
    return manifest, hashlib.sha256(manifest.encode()).hexdigest()
