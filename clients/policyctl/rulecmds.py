"""policyctl rules check / rules test: the authoring loop for rule files, run locally."""

from __future__ import annotations

import argparse

from clients.policyctl.output import Column, Result
from policyd.facts.fields import FIELDS
from policyd.policy.engine import RuleEngine
from policyd.policy.loader import BUNDLED_RULES, RuleFileError, load_policy
from policyd.policy.selftest import run_tests


def check(args: argparse.Namespace) -> Result:
    """Static checks: YAML, schema, fact fields, templates, ids, orders, kinds, groups, messages; durable-rules
    compiles it. Settings a directory of extra rules does not declare come from the bundled rules."""
    try:
        policy = load_policy(args.directory, BUNDLED_RULES)
        RuleEngine(policy.rules)
    except RuleFileError as err:
        return Result({"ok": False, "error": str(err)}, errors=[str(err)], code=1)
    except Exception as err:  # durable-rules reports bad rulesets with bare errors
        message = f"{args.directory}: durable-rules refused the compiled rules: {err}"
        return Result({"ok": False, "error": message}, errors=[message], code=1)
    data = {"ok": True, "rules": len(policy.rules), "files": len(policy.sources), "revision": policy.revision}
    return Result(
        data,
        text=f"ok: {len(policy.rules)} rules in {len(policy.sources)} files, revision {policy.revision}",
        names=[r.id for r in policy.rules],
        default="text",
    )


def test(args: argparse.Namespace) -> Result:
    try:
        policy = load_policy(args.directory, BUNDLED_RULES)
        engine = RuleEngine(policy.rules)
    except RuleFileError as err:
        return Result({"passed": 0, "failed": 0, "error": str(err)}, errors=[str(err)], code=1)
    count, failures = run_tests(policy, engine)
    untested = [r.id for r in policy.rules if not r.tests and not r.group]
    failed = len({(f.what, f.item_id, f.test) for f in failures})
    lines = [*(f"FAIL {failure}" for failure in failures), *(f"note: rule {r} has no tests" for r in untested)]
    lines.append(f"{count - failed} passed, {failed} failed")
    data = {"passed": count - failed, "failed": failed, "failures": [str(f) for f in failures], "untested": untested}
    return Result(
        data, text="\n".join(lines), names=[r.id for r in policy.rules], default="text", code=1 if failures else 0
    )


def fields(args: argparse.Namespace) -> Result:
    """The fact fields a rule may test or print, with their types and meaning."""
    return Result(
        [{"name": name, "type": f.type, "scope": f.scope, "doc": f.doc} for name, f in FIELDS.items()],
        [Column("FIELD"), Column("TYPE"), Column("ABOUT"), Column("MEANING")],
        [(name, f.type, f.scope, f.doc) for name, f in FIELDS.items()],
        names=list(FIELDS),
    )
