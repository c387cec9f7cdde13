"""policyctl rules check / rules test: the authoring loop for rule files, run locally."""

from __future__ import annotations

import argparse
from pathlib import Path

from policyd import offline
from policyd.clients.policyctl.inputs import InputError
from policyd.clients.policyctl.output import Column, Result


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
    try:
        checked = offline.check(_directory(args.directory))
    except offline.RulesRefused as err:
        return Result(None, errors=[str(err)], code=1)
    rules = len(checked.rule_ids)
    data = {"ok": True, "rules": rules, "files": checked.files, "revision": checked.revision}
    beside = " (with the bundled rules)" if checked.beside_bundled else ""
    return Result(
        data,
        text=f"ok: {rules} rules in {checked.files} files{beside}, revision {checked.revision}",
        names=list(checked.rule_ids),
        default="text",
    )


def test(args: argparse.Namespace) -> Result:
    try:
        tested = offline.test(_directory(args.directory))
    except offline.RulesRefused as err:
        return Result(None, errors=[str(err)], code=1)
    passed, failed = tested.ran - tested.failed, tested.failed
    lines = [*(f"FAIL {failure}" for failure in tested.failures)]
    lines += [f"note: rule {r} has no tests" for r in tested.untested]
    lines.append(f"{passed} passed, {failed} failed")
    data = {"passed": passed, "failed": failed, "failures": list(tested.failures), "untested": list(tested.untested)}
    code = 1 if tested.failures else 0
    return Result(data, text="\n".join(lines), names=list(tested.rule_ids), default="text", code=code)


def fields(args: argparse.Namespace) -> Result:
    """The fact fields a rule may test or print, with their types, what they read and meaning."""
    facts = offline.facts()
    data = [{"name": f.name, "type": f.type, "scope": f.scope, "source": f.source, "doc": f.doc} for f in facts]
    return Result(
        data,
        [Column("FIELD"), Column("TYPE"), Column("ABOUT"), Column("SOURCE"), Column("MEANING")],
        [(f.name, f.type, f.scope, f.source, f.doc) for f in facts],
        items=data,
        names=[f.name for f in facts],
    )
