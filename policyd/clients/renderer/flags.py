"""Command-line flags in a runner's argv lists (``args``, ``command``), written either as one
token ``--flag=value`` or as two tokens ``--flag value``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from policyd.errors import InvalidInput

_NUMBER = re.compile(r"-\d+(\.\d+)?")


@dataclass(frozen=True)
class Flag:
    key: str
    value: str | None  # None: a switch, which takes no value
    joined: bool = True  # written as one token ``key=value``

    def tokens(self) -> list[str]:
        if self.value is None:
            return [self.key]
        return [f"{self.key}={self.value}"] if self.joined else [self.key, self.value]


def is_value(token: str) -> bool:
    """Whether a token after a flag is that flag's value rather than the next flag."""
    return not token.startswith("-") or token == "-" or bool(_NUMBER.fullmatch(token))


def parse_flags(items: Sequence[str]) -> list[Flag]:
    """Flags from a list such as ``["--a=1", "--b 2", "--c", "3", "--d"]``."""
    flags: list[Flag] = []
    i = 0
    while i < len(items):
        item = items[i].strip()
        if not item.startswith("-") or item == "-":
            raise InvalidInput(f"[{i}]", f"expected a flag starting with '-', got {items[i]!r}")
        if "=" in item:
            key, value = item.split("=", 1)
            flags.append(Flag(key, value))
        elif len(item.split(None, 1)) == 2:
            key, value = item.split(None, 1)
            flags.append(Flag(key, value, joined=False))
        elif i + 1 < len(items) and is_value(items[i + 1]):
            flags.append(Flag(item, items[i + 1], joined=False))
            i += 1
        else:
            flags.append(Flag(item, None))
        i += 1
    return flags


def set_flag(argv: Sequence[str], flag: Flag) -> tuple[list[str], bool]:
    """``argv`` with every occurrence of ``flag.key`` given ``flag.value``, each in the form it
    is written in; and whether there was any."""
    out: list[str] = []
    found = False
    i = 0
    while i < len(argv):
        token = argv[i]
        if token.startswith(flag.key + "="):
            found = True
            out.append(f"{flag.key}={flag.value}" if flag.value is not None else flag.key)
        elif token == flag.key:
            found = True
            if i + 1 < len(argv) and is_value(argv[i + 1]):
                i += 1  # the old value
                out.extend([flag.key] if flag.value is None else [flag.key, flag.value])
            else:
                out.extend(flag.tokens())
        else:
            out.append(token)
        i += 1
    return out, found
