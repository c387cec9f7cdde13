"""Output: kubectl-style tables, JSON and YAML."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml
from google.protobuf import json_format
from google.protobuf.message import Message


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[["<none>" if c in ("", None) else str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines)


def as_dict(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = json_format.MessageToDict(message, always_print_fields_with_no_presence=True)
    return out


def dump(data: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=False)
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False).rstrip()
