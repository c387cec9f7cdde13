"""A loaded, validated policy revision: rules, messages, scoring and ranking."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

EFFECTS = ("exclude", "reject", "skip", "advise", "score", "allow")
# exclude: the runtime does not declare support (not compatible, not selectable, listed as excluded)
# reject:  not selectable, listed as excluded, compatibility judged apart (e.g. disabled)
# skip:    not selectable and not listed (e.g. no autoSelect entry)
# advise:  adds an advisory, no other effect
# score:   adds ``points`` to the runtime's score
# allow:   waives the rules it ``overrides`` where its condition holds (their conditions
#          get "and not this one" at load time); it never fires itself
FIRST_MATCH_GROUPS = {"exclude": "compat", "reject": "select", "skip": "select"}


@dataclass(frozen=True)
class RuleTest:
    name: str
    facts: Mapping[str, Any]
    expect: Mapping[str, Any]


@dataclass(frozen=True)
class Rule:
    id: str
    order: int
    applies_to: str
    effect: str
    condition: Mapping[str, Any]  # compiled durable-rules condition
    fields: frozenset[str]  # fact fields the condition tests
    reason: str
    component: str
    model_value: str
    runtime_value: str
    advisory: str
    points: int
    tests: tuple[RuleTest, ...]
    source: str
    line: int
    # exclude only: what Resolve does with a runtime named explicitly: OME's warning and
    # event (warn), or a rejection (reject) for a runtime that cannot start at all
    named: str = "warn"
    overrides: tuple[str, ...] = ()  # allow only: the rules it waives

    @property
    def group(self) -> str:
        """The durable-rules ruleset that evaluates this rule."""
        return FIRST_MATCH_GROUPS.get(self.effect, f"{self.effect}:{self.id}")


@dataclass(frozen=True)
class RankKey:
    key: str
    direction: str = "asc"
    order: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scoring:
    default_weight: int
    default_priority: int
    add: tuple[str, ...]
    multiply_by: str

    def entry_score(self, record: Mapping[str, Any]) -> int:
        total = sum(int(record[name]) for name in self.add)
        return total * int(record["priority"]) if self.multiply_by == "priority" else total


@dataclass(frozen=True)
class Policy:
    revision: str
    rules: tuple[Rule, ...]
    messages: Mapping[str, str]
    scoring: Scoring
    ranking: tuple[RankKey, ...]
    sources: tuple[str, ...] = field(default_factory=tuple)

    @property
    def fields(self) -> frozenset[str]:
        """Every fact field some rule tests: what the engine is sent."""
        return frozenset().union(*(r.fields for r in self.rules)) if self.rules else frozenset()
