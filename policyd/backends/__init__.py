"""Engine backends, each a package of its own behind one interface (interface.py), with a rule
file that judges its facts. This registry is the one place the core names them, and the core's
one way in: a backend is installed by adding it to BACKENDS."""

from __future__ import annotations

from typing import Any

from policyd.backends.diffusers.backend import DIFFUSERS
from policyd.backends.engine import engine_key
from policyd.backends.interface import Backend

__all__ = ["BACKENDS", "Backend", "engine_key"]  # engine_key: what backends' engine facts are memoised by

BACKENDS: tuple[Backend[Any], ...] = (DIFFUSERS,)
