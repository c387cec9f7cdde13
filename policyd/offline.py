"""What policyd's offline tools run in their own process: rule files loaded, compiled and
self-tested (policyctl rules check, test and fields), and Simulate and Lint over a catalog
directory (policyctl whatif and lint with --catalog). A client reaches policyd's layers through
this one module, never the loader, the engine, the self-tests or the serving state themselves.
A directory of extra rules (it declares no settings) is read as it would serve: beside the
bundled rules."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf.message import Message

from policyd.facts.fields import FIELDS
from policyd.policy.engine import RuleEngine
from policyd.policy.loader import BUNDLED_RULES, RuleFileError, declares_settings, directory_texts, load_policy
from policyd.policy.model import Policy
from policyd.policy.selftest import run_tests


class RulesRefused(Exception):
    """Rule files that do not load or compile; the message says where and why, in one line."""


@dataclass(frozen=True)
class Checked:
    rule_ids: tuple[str, ...]  # in rule order
    files: int
    revision: str
    beside_bundled: bool  # extra rules, checked beside the bundled ones


@dataclass(frozen=True)
class Tested:
    ran: int
    failures: tuple[str, ...]  # each as ``file:line: rule id: test name: what differs``
    failed: int  # the tests that failed (one may fail in several ways)
    rule_ids: tuple[str, ...]  # the rules of the directory tested
    untested: tuple[str, ...]  # those of them (outside groups) without tests


@dataclass(frozen=True)
class Fact:
    name: str
    type: str
    scope: str
    source: str  # what it reads: the request, the runtime judged, or other catalog objects (records.py)
    doc: str


def _extra(directory: Path) -> Path | None:
    return None if not directory.is_dir() or declares_settings(directory) else directory


def _compiled(directory: Path) -> tuple[Policy, RuleEngine]:
    try:
        policy = load_policy(directory, BUNDLED_RULES)
    except RuleFileError as err:
        raise RulesRefused(str(err)) from None
    try:
        return policy, RuleEngine(policy.rules, policy.fields)
    except RuleFileError as err:
        raise RulesRefused(str(err)) from None
    except Exception as err:  # durable-rules reports bad rulesets with bare errors
        raise RulesRefused(f"{directory}: durable-rules refused the compiled rules: {err}") from None


def check(directory: Path) -> Checked:
    """YAML, schema, fact fields, templates, ids, orders, kinds, groups, messages; and
    durable-rules compiles it."""
    policy, _ = _compiled(directory)
    return Checked(
        tuple(r.id for r in policy.rules), len(policy.sources), policy.revision, _extra(directory) is not None
    )


def test(directory: Path) -> Tested:
    """The rule files' own tests (those of the extra rules alone, for a directory of them)."""
    policy, engine = _compiled(directory)
    within = _extra(directory)
    ran, failures = run_tests(policy, engine, within)
    mine = [r for r in policy.rules if within is None or Path(r.source).parent == within]
    return Tested(
        ran,
        tuple(str(f) for f in failures),
        len({(f.what, f.item_id, f.test) for f in failures}),
        tuple(r.id for r in mine),
        tuple(r.id for r in mine if not r.tests and not r.group),
    )


def facts() -> list[Fact]:
    """The fact fields a rule may test or print."""
    return [Fact(name, f.type, f.scope, f.source, f.doc) for name, f in FIELDS.items()]


def rule_file_texts(directory: Path) -> list[tuple[str, str]]:
    """Each rule file of ``directory`` by its name, with its text (what-if sends them whole)."""
    try:
        return directory_texts(directory)
    except RuleFileError as err:
        raise RulesRefused(str(err)) from None


class LocalWhatIf:
    """The daemon's Simulate and Lint over a catalog directory, in this process: a serving state
    of the directory with the bundled rules, as `policyd --catalog DIR` would serve it."""

    def __init__(self, directory: Path, validation: str) -> None:
        # imported when asked for: the tools' other commands start without the server's modules
        from policyd.server.state import ServingState
        from policyd.server.whatif_calls import WhatIf

        # the state logs what the directory refuses; the tool reports it instead
        logging.getLogger("policyd").addHandler(logging.NullHandler())
        self.state = ServingState(BUNDLED_RULES, directory, lambda attempt: None)
        self.whatif = WhatIf(self.state)
        self.validation = validation

    def catalog_errors(self) -> list[str]:
        """What the directory holds that the catalog refused, a line each."""
        return [str(e) for e in self.state.catalog_errors]

    def call(self, method: str, request: Message) -> tuple[Any, list[str]]:
        """The answer to a Simulate or Lint ``request``, and the field-validation warnings."""
        from policyd.server.fieldcheck import FieldCheck

        fields = FieldCheck(self.validation)
        handlers: dict[str, Callable[..., Any]] = {"Simulate": self.whatif.simulate, "Lint": self.whatif.lint}
        # as the daemon answers a call bringing objects of its own: a decider keeping nothing
        response = handlers[method](request, self.state.decider.plain(), self.state.catalog, fields)
        return response, list(fields.warnings)
