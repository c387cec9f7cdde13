"""A servable rules revision: the checked policy with its compiled engine."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policyd.backends import BACKENDS, Backend
from policyd.facts.fields import catalogue
from policyd.policy.engine import RuleEngine
from policyd.policy.loader import RuleFileError, RuleText, directory_texts, load_policy_texts
from policyd.policy.model import Policy
from policyd.policy.selftest import run_tests


@dataclass(frozen=True)
class Revision:
    policy: Policy
    engine: RuleEngine
    tests_run: int
    backends: tuple[Backend[Any], ...] = BACKENDS  # the engine backends its fact catalogue is of

    @property
    def id(self) -> str:
        return self.policy.revision


def build_revision(
    directory: Path, beside: Path | None = None, backends: Sequence[Backend[Any]] = BACKENDS
) -> Revision:
    """Load, compile and self-test ``directory``; RuleFileError when any step fails. Its rules
    may test the core's fact fields and ``backends``' (the registry's, by default)."""
    return build_revision_texts(directory_texts(directory), str(directory), beside, backends)


def build_revision_texts(
    texts: Sequence[RuleText], where: str, beside: Path | None = None, backends: Sequence[Backend[Any]] = BACKENDS
) -> Revision:
    """``build_revision`` of rule files given by name and content (what a what-if request sends)."""
    policy = load_policy_texts(texts, where, beside, catalogue(backends))
    try:
        engine = RuleEngine(policy.rules, policy.fields)
    except Exception as err:  # durable-rules reports bad rulesets with bare errors
        raise RuleFileError(where, f"durable-rules refused the compiled rules: {err}") from None
    count, failures = run_tests(policy, engine)
    if failures:
        first = failures[0]
        more = f" (and {len(failures) - 1} more failing tests)" if len(failures) > 1 else ""
        raise RuleFileError(first.source, f"test {first.test}: {first.message}{more}", first.item_id, first.line)
    return Revision(policy, engine, count, tuple(backends))
