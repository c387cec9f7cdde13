"""Catalog objects as policyd takes them from the cluster: shared by the controller, which keeps
policyd's catalog in sync, and the webhook, which sends what a review did not find there."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from policyd.resources.cluster_content import catalog_content

Manifest = Mapping[str, Any]
Item = tuple[str, str]  # (manifest as policyd takes it, its digest)


def catalog_item(obj: Manifest) -> Item:
    """The object as policyd takes it (policyd.resources.cluster_content), and its digest."""
    manifest = json.dumps(catalog_content(obj), sort_keys=True)
    return manifest, hashlib.sha256(manifest.encode()).hexdigest()
