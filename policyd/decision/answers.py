"""What a decision answers: Select's ranking, Explain's verdicts, Resolve's named runtime,
Effective's modes and backends, Decide's whole answer. Plain values the server encodes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from policyd.backends import Backend
from policyd.decision.verdict_cache import KeptRows
from policyd.decision.verdicts import RuntimeVerdict, Verdict
from policyd.policy.outcomes import Reason, Refusal
from policyd.resources.objects import BaseModel, ServingRuntime

E = TypeVar("E")


@dataclass(frozen=True)
class Selection:
    ranking: tuple[RuntimeVerdict, ...]
    refusal: Refusal | None  # the request refused, or nothing selectable (OME's message)
    warnings: tuple[str, ...]
    excluded: tuple[RuntimeVerdict, ...]  # the runtimes OME's message lists; only when nothing is selectable

    @property
    def error(self) -> str:
        return self.refusal.message if self.refusal else ""


@dataclass(frozen=True)
class Explanation:
    model: BaseModel
    model_format: str
    scope: Sequence[ServingRuntime]  # every runtime in scope, in scope order (the catalog's object)
    # each one's verdict; a verdict may stand for every runtime of its shape (decision/verdict_cache.py)
    verdicts: Sequence[Verdict]
    kept: KeptRows | None = None  # which kept verdicts they are, when they are (decision/verdict_cache.py)

    @property
    def runtimes(self) -> list[RuntimeVerdict]:
        """Each runtime with its verdict."""
        return list(map(RuntimeVerdict, self.scope, self.verdicts))


@dataclass(frozen=True)
class Resolution:
    runtime: ServingRuntime | None
    verdict: RuntimeVerdict | None
    warning: str = ""
    event: str = ""
    event_reason: str = ""
    refusal: Refusal | None = None
    entry_index: int = -1


@dataclass(frozen=True)
class ComponentMode:
    component: str
    mode: str
    source: str
    error: Refusal | None


@dataclass(frozen=True)
class BackendEffect(Generic[E]):
    """What an engine backend makes take effect in the runtime's engine, with the rules' say on it."""

    backend: Backend[E]
    effect: E
    refusal: Reason | None  # why it would not start: the runtime's first check that refuses it when named
    advisories: tuple[Reason, ...]  # the runtime's


@dataclass(frozen=True)
class Choice:
    """How Effective came to its runtime: named in spec.runtime.name (judged as Resolve judges
    it), or selected, the first of Select's ranking."""

    chosen: RuntimeVerdict
    named: bool
    entry_index: int  # the matched entry, -1 when none (a named runtime the request refuses)
    compatible: bool  # whether it declares support for the model (True without one: no model work)
    reasons: tuple[Reason, ...]  # why it does not declare support, then its advisories
    selectable: int = 0  # selected: how many runtimes could be
    runner_up: RuntimeVerdict | None = None  # selected: the second of the ranking
    # selected, with a runner-up: the ranking key it wins on, its value and the runner-up's
    decided: tuple[str, Any, Any] | None = None

    @property
    def decided_by(self) -> str:
        return "spec.runtime.name" if self.named else "ranking" if self.runner_up else "only-selectable"


@dataclass(frozen=True)
class Effective:
    runtime: ServingRuntime | None
    modes: tuple[ComponentMode, ...]
    errors: tuple[Refusal, ...]
    backends: tuple[BackendEffect[Any], ...] = ()  # each registered backend the engine runs
    choice: Choice | None = None  # with a runtime


@dataclass(frozen=True)
class Decision:
    """Resolve's answer (a named runtime) or Select's, and Effective's when a runtime can be used."""

    resolution: Resolution | None
    selection: Selection | None
    effective: Effective | None
