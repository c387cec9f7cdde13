"""What an engine backend is to the core: one interface, so a backend is a package of its own
(with a rule file that judges its facts) and the core never names it. A backend describes; the
rules judge, and the decision layer attaches their judgement to what the backend makes take
effect. Everything a backend answers is pure and deterministic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from google.protobuf.message import Message

from policyd.contract import policy_pb2 as pb
from policyd.records import Field, Record
from policyd.resources.objects import BaseModel, InferenceService, ServingRuntime

E = TypeVar("E")  # what a backend makes take effect in one engine, its own type


class Judged(Protocol):
    """The rules' refusal of an engine, as a backend reads it (policy.outcomes.Reason is one)."""

    @property
    def component(self) -> str: ...

    @property
    def message(self) -> str: ...


class Backend(Protocol[E]):
    """An engine backend: its facts (declared in ``fields``, which the fact catalogue takes in),
    what it makes take effect in an engine that runs it, and that as the contract carries it."""

    @property
    def name(self) -> str: ...

    @property
    def prefix(self) -> str:
        """What each of its fact fields begins with, then ``_`` (the catalogue holds it to that)."""
        ...

    @property
    def fields(self) -> Mapping[str, Field]:
        """The fact fields it declares: model and runtime scopes only (none the core declares)."""
        ...

    @property
    def section(self) -> str:
        """The field of an answer's EngineBackends that carries its section."""
        ...

    def model_facts(self, model: BaseModel) -> Record:
        """Its model-scope facts of ``model`` (pure: the core memoises them by the model's digest)."""
        ...

    def engine_facts(self, runtime: ServingRuntime, isvc: InferenceService | None) -> Record:
        """Its runtime-scope facts of the runtime's engine as the InferenceService runs it (the
        facts of an engine that does not run it too: every record carries every field). Pure,
        reading only the runtime and the InferenceService's engine: the core memoises them by the
        runtime's digest and backends/engine.py's engine_key."""
        ...

    def runs(self, engine_facts: Record) -> bool:
        """Whether the runtime's engine runs this backend, from the runtime record's engine facts."""
        ...

    def effective(
        self, runtime: ServingRuntime, isvc: InferenceService | None, model: BaseModel | None, refusal: Judged | None
    ) -> E:
        """What takes effect in an engine that ``runs`` it; ``refusal``: why the rules would not
        let it start (the runtime's first check that refuses it when named), if they would not."""
        ...

    def encode(self, effect: E, refusal: pb.Reason | None, advisories: Sequence[pb.Reason]) -> Message:
        """``effect`` as its section of the answer, with the rules' refusal and advisories."""
        ...
