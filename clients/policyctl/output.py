"""What a command prints and how: one Result per command, shown as -o asks — table, wide
(more columns), name (kind.group/name per object), json, yaml or jsonpath=TEMPLATE. Results
go to stdout; warnings and errors to stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from clients.policyctl import jsonpath

FORMATS = ("table", "wide", "name", "json", "yaml", "jsonpath=TEMPLATE")


class OutputError(ValueError):
    pass


def output_format(text: str) -> str:
    """Check -o's value (argparse type)."""
    if text in FORMATS[:-1] or (text.startswith("jsonpath=") and len(text) > len("jsonpath=")):
        return text
    raise OutputError(
        f"unable to match a printer suitable for the output format {text!r}, allowed formats are: " + ", ".join(FORMATS)
    )


def shows_answer(fmt: str | None) -> bool:
    """Whether the format prints the daemon's whole answer (json, yaml, jsonpath), not a view of it."""
    return fmt is not None and (fmt in ("json", "yaml") or fmt.startswith("jsonpath="))


@dataclass(frozen=True)
class Column:
    header: str
    wide: bool = False  # only in -o wide


@dataclass
class Result:
    """``data`` is what json, yaml and jsonpath show (the daemon's answer; None when the command
    failed with nothing to show: stdout stays empty, as kubectl's does); the table has
    ``columns`` and ``rows`` under an optional ``title`` line; ``names`` are the objects for -o
    name; ``text`` replaces the table as the default view when set."""

    data: Any
    columns: Sequence[Column] = ()
    rows: Sequence[Sequence[Any]] = ()
    title: str = ""
    footer: str = ""  # below the table (status: its overrides and catalog errors)
    names: Sequence[str] = ()
    text: str | None = None
    default: str = "table"
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    code: int = 0


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[["<none>" if c in ("", None) else str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines)


def _table(result: Result, wide: bool) -> str:
    if not result.rows and not result.title:
        return ""  # as kubectl prints no header for no objects (the error, if any, goes to stderr)
    keep = [i for i, c in enumerate(result.columns) if wide or not c.wide]
    body = table([result.columns[i].header for i in keep], [[row[i] for i in keep] for row in result.rows])
    return "\n".join(part for part in (result.title, body, result.footer) if part)


def render(result: Result, fmt: str | None) -> str:
    """The stdout text of a result in a format (None: the command's own default view)."""
    if result.data is None:
        return ""
    fmt = fmt or result.default
    if fmt.startswith("jsonpath="):
        try:
            return jsonpath.render(fmt.removeprefix("jsonpath="), result.data)
        except jsonpath.TemplateError as err:
            raise OutputError(str(err)) from None
    if fmt == "json":
        return json.dumps(result.data, indent=2)
    if fmt == "yaml":
        return yaml.safe_dump(result.data, sort_keys=False, default_flow_style=False).rstrip()
    if fmt == "name":
        return "\n".join(result.names)
    if result.text is not None and fmt == result.default:
        return result.text
    if not result.columns:
        return yaml.safe_dump(result.data, sort_keys=False, default_flow_style=False).rstrip()
    return _table(result, fmt == "wide")


def show(result: Result, fmt: str | None) -> int:
    for warning in result.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    text = render(result, fmt)
    if fmt and fmt.startswith("jsonpath="):
        sys.stdout.write(text)  # exactly the template's text, as kubectl prints it: no newline added
    elif text:
        print(text)
    for error in result.errors:
        print(error_line(error), file=sys.stderr)
    return result.code


def error_line(message: str) -> str:
    """``error: …``, except the API's own ``Error from server (Reason): …`` lines, as kubectl prints them."""
    return message if message.startswith("Error from server") else f"error: {message}"


_INT64 = {FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT64}
_INT64 |= {FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED64}


def _numbers(message: Message, data: Any) -> Any:
    """The proto3 JSON mapping writes 64-bit integers as strings; a CLI prints them as numbers."""
    if not isinstance(data, dict) or message.DESCRIPTOR.full_name.startswith("google.protobuf."):
        return data
    for fd in message.DESCRIPTOR.fields:
        if fd.json_name not in data:
            continue
        value, sub = data[fd.json_name], getattr(message, fd.name)
        if fd.type in _INT64:
            data[fd.json_name] = [int(v) for v in value] if isinstance(value, list) else int(value)
        elif fd.message_type is not None and not fd.message_type.GetOptions().map_entry:
            if isinstance(value, list):
                data[fd.json_name] = [_numbers(m, v) for m, v in zip(sub, value, strict=True)]
            else:
                data[fd.json_name] = _numbers(sub, value)
    return data


def as_dict(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = _numbers(
        message, json_format.MessageToDict(message, always_print_fields_with_no_presence=True)
    )
    return out
