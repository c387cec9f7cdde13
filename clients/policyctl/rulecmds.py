"""policyctl rules check / rules test: the authoring loop for rule files, run locally."""

from __future__ import annotations

import argparse
from pathlib import Path

from clients.policyctl.output import table
from policyd.facts.fields import FIELDS
from policyd.policy.engine import RuleEngine
from policyd.policy.loader import BUNDLED_RULES, RuleFileError, declares_settings, load_policy
from policyd.policy.selftest import run_tests


def _extra(directory: Path) -> Path | None:
    """A directory of extra rules (it declares no settings) is checked beside the bundled rules."""
    return None if not directory.is_dir() or declares_settings(directory) else directory


def check(args: argparse.Namespace) -> int:
    """Static checks: YAML, schema, fact fields, templates, ids, orders, kinds, groups, messages; durable-rules
    compiles it. A directory of extra rules is checked as it would serve: beside the bundled rules."""
    try:
        policy = load_policy(args.directory, BUNDLED_RULES)
        RuleEngine(policy.rules)
    except RuleFileError as err:
        print(f"error: {err}")
        return 1
    except Exception as err:  # durable-rules reports bad rulesets with bare errors
        print(f"error: {args.directory}: durable-rules refused the compiled rules: {err}")
        return 1
    beside = " (with the bundled rules)" if _extra(args.directory) else ""
    print(f"ok: {len(policy.rules)} rules in {len(policy.sources)} files{beside}, revision {policy.revision}")
    return 0


def test(args: argparse.Namespace) -> int:
    try:
        policy = load_policy(args.directory, BUNDLED_RULES)
        engine = RuleEngine(policy.rules)
    except RuleFileError as err:
        print(f"error: {err}")
        return 1
    within = _extra(args.directory)
    count, failures = run_tests(policy, engine, within)
    for failure in failures:
        print(f"FAIL {failure}")
    mine = [r for r in policy.rules if within is None or Path(r.source).parent == within]
    untested = [r.id for r in mine if not r.tests and not r.group]
    for rule_id in untested:
        print(f"note: rule {rule_id} has no tests")
    failed = len({(f.what, f.item_id, f.test) for f in failures})
    print(f"{count - failed} passed, {failed} failed")
    return 1 if failures else 0


def fields(args: argparse.Namespace) -> int:
    """The fact fields a rule may test or print, with their types and meaning."""
    rows = [(name, f.type, f.scope, f.doc) for name, f in FIELDS.items()]
    print(table(("FIELD", "TYPE", "ABOUT", "MEANING"), rows))
    return 0
