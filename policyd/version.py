"""The one version: the package's, which every command answers ``--version`` with and GetStatus
carries (the image, the chart's appVersion and pyproject.toml say the same)."""

from __future__ import annotations

from importlib import metadata

VERSION = metadata.version("policyd")


def line(prog: str) -> str:
    """What ``PROG --version`` prints."""
    return f"{prog} {VERSION}"
