"""The log lines of policyd and its clients (one process each): JSON, or text with the same
fields for people; the ``extra`` fields of a record (request ids, fields, revisions) in both."""

from __future__ import annotations

import json
import logging
from typing import Any

_RESERVED = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and any ``extra`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        out.update(_extras(record))
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in record.__dict__.items() if k not in _RESERVED}


class TextFormatter(logging.Formatter):
    """For people: time, level, logger, message, then the same ``extra`` fields as the JSON
    format as key=value (values with spaces quoted)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = " ".join(f"{k}={_text_value(v)}" for k, v in _extras(record).items())
        if not fields:
            return line
        head, newline, rest = line.partition("\n")  # a traceback stays below the fields
        return f"{head} {fields}{newline}{rest}"


def _text_value(value: Any) -> str:
    text = str(value)
    return json.dumps(text) if not text or any(c.isspace() or c in '"=' for c in text) else text


def add_fields(**fields: Any) -> None:
    """Fields every later line of this process carries (a worker of ``--processes``: its index
    and pid, so that workers writing to one stream can be told apart)."""

    def tag(record: logging.LogRecord) -> bool:
        record.__dict__.update(fields)
        return True

    for handler in logging.getLogger().handlers:
        handler.addFilter(tag)


def configure_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
