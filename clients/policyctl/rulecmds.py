"""policyctl rules check / rules test: the authoring loop for rule files, run locally."""

from __future__ import annotations

import argparse
from pathlib import Path

from clients.policyctl.inputs import InputError
from clients.policyctl.output import Column, Result
from policyd.facts.fields import FIELDS
from policyd.policy.engine import RuleEngine
from policyd.policy.loader import BUNDLED_RULES, RuleFileError, declares_settings, load_policy
from policyd.policy.selftest import run_tests


def _extra(directory: Path) -> Path | None:
    """A directory of extra rules (it declares no settings) is checked beside the bundled rules."""
    return None if not directory.is_dir() or declares_settings(directory) else directory


def _directory(path: Path) -> Path:
    """The rules directory the command was given, or the one line that says what it is instead."""
    if not path.exists():
        raise InputError(f'the path "{path}" does not exist')
    if not path.is_dir():
        raise InputError(f'the path "{path}" is not a directory (give the directory of rule files)')
    return path


def check(args: argparse.Namespace) -> Result:
    """Static checks: YAML, schema, fact fields, templates, ids, orders, kinds, groups, messages; durable-rules
    compiles it. A directory of extra rules is checked as it would serve: beside the bundled rules."""
    directory = _directory(args.directory)  # before the try: durable-rules' bare errors are caught there
    try:
        policy = load_policy(directory, BUNDLED_RULES)
        RuleEngine(policy.rules)
    except RuleFileError as err:
        return Result(None, errors=[str(err)], code=1)
    except Exception as err:  # durable-rules reports bad rulesets with bare errors
        return Result(None, errors=[f"{args.directory}: durable-rules refused the compiled rules: {err}"], code=1)
    data = {"ok": True, "rules": len(policy.rules), "files": len(policy.sources), "revision": policy.revision}
    beside = " (with the bundled rules)" if _extra(args.directory) else ""
    return Result(
        data,
        text=f"ok: {len(policy.rules)} rules in {len(policy.sources)} files{beside}, revision {policy.revision}",
        names=[r.id for r in policy.rules],
        default="text",
    )


def test(args: argparse.Namespace) -> Result:
    directory = _directory(args.directory)
    try:
        policy = load_policy(directory, BUNDLED_RULES)
        engine = RuleEngine(policy.rules)
    except RuleFileError as err:
        return Result(None, errors=[str(err)], code=1)
    within = _extra(args.directory)
    count, failures = run_tests(policy, engine, within)
    mine = [r for r in policy.rules if within is None or Path(r.source).parent == within]
    untested = [r.id for r in mine if not r.tests and not r.group]
    failed = len({(f.what, f.item_id, f.test) for f in failures})
    lines = [*(f"FAIL {failure}" for failure in failures), *(f"note: rule {r} has no tests" for r in untested)]
    lines.append(f"{count - failed} passed, {failed} failed")
    data = {"passed": count - failed, "failed": failed, "failures": [str(f) for f in failures], "untested": untested}
    return Result(data, text="\n".join(lines), names=[r.id for r in mine], default="text", code=1 if failures else 0)


def fields(args: argparse.Namespace) -> Result:
    """The fact fields a rule may test or print, with their types and meaning."""
    return Result(
        [{"name": name, "type": f.type, "scope": f.scope, "doc": f.doc} for name, f in FIELDS.items()],
        [Column("FIELD"), Column("TYPE"), Column("ABOUT"), Column("MEANING")],
        [(name, f.type, f.scope, f.doc) for name, f in FIELDS.items()],
        names=list(FIELDS),
    )
