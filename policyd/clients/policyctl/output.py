"""What a command prints and how: one Result per command, shown as -o asks — table, wide
(more columns), name (kind.group/name per object), json, yaml, jsonpath=TEMPLATE or
custom-columns=HEADER:.path,… — with kubectl's --no-headers and --sort-by for the tables.
Results go to stdout; warnings and errors to stderr."""

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

from policyd.clients.policyctl import jsonpath

FORMATS = ("table", "wide", "name", "json", "yaml", "jsonpath=TEMPLATE", "custom-columns=HEADER:.path,…")
CUSTOM = "custom-columns="


class OutputError(ValueError):
    pass


def output_format(text: str) -> str:
    """Check -o's value (argparse type)."""
    if text in FORMATS[:5] or (text.startswith("jsonpath=") and len(text) > len("jsonpath=")):
        return text
    if text.startswith(CUSTOM):
        custom_columns(text)
        return text
    raise OutputError(
        f"unable to match a printer suitable for the output format {text!r}, allowed formats are: " + ", ".join(FORMATS)
    )


def custom_columns(fmt: str) -> list[tuple[str, str]]:
    """-o custom-columns=NAME:.path,SCORE:.score as (header, path) pairs, as kubectl takes them."""
    pairs = []
    for spec in fmt.removeprefix(CUSTOM).split(","):
        header, colon, path = spec.partition(":")
        if not colon or not header or not path:
            raise OutputError(f"unexpected custom-columns spec: {spec}, expected <header>:<json-path-expr>")
        pairs.append((header, path))
    return pairs


@dataclass(frozen=True)
class Printing:
    """How to print: -o's format (None: the command's own view), and kubectl's --no-headers and --sort-by."""

    format: str | None = None
    no_headers: bool = False
    sort_by: str | None = None


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
    items: Sequence[Any] = ()  # the part of ``data`` each row shows (custom-columns and --sort-by read them)
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


def _sort_key(value: Any) -> tuple[int, Any]:
    """kubectl's order: what has no value first, then numbers by number, then text."""
    if value is None:
        return (0, 0)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (1, value)
    return (2, jsonpath.text(value))


def _rows(result: Result, printing: Printing) -> list[tuple[Any, Sequence[Any]]]:
    """The (item, row) pairs in --sort-by's order."""
    if (printing.sort_by or (printing.format or "").startswith(CUSTOM)) and len(result.items) != len(result.rows):
        raise OutputError("--sort-by and -o custom-columns take the commands that print a table")
    pairs = list(zip(result.items, result.rows, strict=True)) if result.items else [(None, r) for r in result.rows]
    if printing.sort_by:
        path = jsonpath.Path(printing.sort_by)

        def key(pair: tuple[Any, Sequence[Any]]) -> tuple[int, Any]:
            found = path.values(pair[0])
            return _sort_key(found[0] if found else None)

        pairs.sort(key=key)
    return pairs


def _table(result: Result, printing: Printing) -> str:
    if not result.rows and not result.title:
        return ""  # as kubectl prints no header for no objects (the error, if any, goes to stderr)
    pairs = _rows(result, printing)
    fmt = printing.format or result.default
    if fmt.startswith(CUSTOM):
        specs = custom_columns(fmt)
        headers = [h for h, _ in specs]
        paths = [jsonpath.Path(p) for _, p in specs]
        rows = [[" ".join(jsonpath.text(v) for v in p.values(item)) for p in paths] for item, _ in pairs]
    else:
        keep = [i for i, c in enumerate(result.columns) if fmt == "wide" or not c.wide]
        headers = [result.columns[i].header for i in keep]
        rows = [[row[i] for i in keep] for _, row in pairs]
    body = table(headers, rows)
    if printing.no_headers:  # the rows alone, for scripts: no header line, title or footer
        return "\n".join(body.splitlines()[1:])
    if fmt.startswith(CUSTOM):  # the columns asked for, and nothing else
        return body
    return "\n".join(part for part in (result.title, body, result.footer) if part)


def render(result: Result, printing: Printing) -> str:
    """The stdout text of a result as ``printing`` asks (its format None: the command's own default view)."""
    if result.data is None:
        return ""
    fmt = printing.format or result.default
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
    if result.text is not None and fmt == result.default and not printing.sort_by:
        return result.text
    if not result.columns:
        if fmt.startswith(CUSTOM) or printing.sort_by:
            raise OutputError("--sort-by and -o custom-columns take the commands that print a table")
        return yaml.safe_dump(result.data, sort_keys=False, default_flow_style=False).rstrip()
    return _table(result, printing)


def show(result: Result, printing: Printing) -> int:
    for warning in result.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    text = render(result, printing)
    if printing.format and printing.format.startswith("jsonpath="):
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
