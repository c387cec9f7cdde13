"""A cluster object as the catalog takes it: its content without the cluster's bookkeeping.
policyd's own watch (policyd --cluster), the controller's push and the webhook's reads all take
objects this way, so one object has one digest wherever it came from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# status, managed fields, resourceVersion and generation change with every write the cluster makes
# (an InferenceService's status with every condition written), never with what the object says
BOOKKEEPING = frozenset({"managedFields", "resourceVersion", "generation"})


def catalog_content(obj: Mapping[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in obj.items() if k != "status"}
    body["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in BOOKKEEPING}
    return body
