"""Load a rules directory into a Policy, or refuse it with file, rule id, line and reason."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from policyd.facts.fields import FIELDS
from policyd.policy import templates
from policyd.policy.conditions import ConditionError, compile_condition, negate
from policyd.policy.messages import MESSAGE_VARIABLES
from policyd.policy.model import FIRST_MATCH_GROUPS, Policy, RankKey, Rule, RuleTest, Scoring
from policyd.resources.manifests import SAFE_LOADER

RULE_FILE_SUFFIXES = (".yaml", ".yml")


@dataclass
class RuleFileError(Exception):
    """A rules directory that cannot be served."""

    file: str
    reason: str
    rule_id: str = ""
    line: int = 0

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        rule = f" rule {self.rule_id}:" if self.rule_id else ""
        return f"{where}:{rule} {self.reason}"


@cache
def schema() -> dict[str, Any]:
    text = resources.files("policyd.policy").joinpath("rulefile.schema.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _rule_lines(text: str) -> list[int]:
    """1-based line of each item of the top-level ``rules`` list."""
    node = yaml.compose(text, Loader=SAFE_LOADER)
    if not isinstance(node, yaml.MappingNode):
        return []
    for key, value in node.value:
        if key.value == "rules" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def rule_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in RULE_FILE_SUFFIXES)


def _read(path: Path) -> tuple[dict[str, Any], list[int], str]:
    text = path.read_text()
    try:
        doc = yaml.load(text, Loader=SAFE_LOADER)
        lines = _rule_lines(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        raise RuleFileError(str(path), f"not valid YAML: {err}", line=mark.line + 1 if mark else 0) from None
    doc = {} if doc is None else doc
    validator = jsonschema.Draft202012Validator(schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        path_items = list(error.absolute_path)
        rule_id, line = "", 0
        if len(path_items) >= 2 and path_items[0] == "rules" and isinstance(path_items[1], int):
            index = path_items[1]
            rule = doc["rules"][index]
            rule_id = str(rule.get("id", f"#{index}")) if isinstance(rule, dict) else f"#{index}"
            line = lines[index] if index < len(lines) else 0
        location = ".".join(str(p) for p in path_items) or "(top level)"
        raise RuleFileError(str(path), f"schema: {location}: {error.message}", rule_id, line)
    return doc, lines, text


def _rule(raw: Mapping[str, Any], source: str, line: int) -> Rule:
    rule_id = raw["id"]

    def fail(reason: str) -> RuleFileError:
        return RuleFileError(source, reason, rule_id, line)

    try:
        condition, used = compile_condition(raw["when"])
    except ConditionError as err:
        raise fail(f"when: {err}") from None
    if raw["applies_to"] == "runtime":
        entry_fields = sorted(f for f in used if FIELDS[f].scope == "entry")
        if entry_fields:
            raise fail(f"applies_to runtime but tests entry fields {', '.join(entry_fields)}")
    effect = raw["effect"]
    if (effect == "score") != ("points" in raw):
        raise fail("points is required with effect score and allowed only there")
    if (effect == "allow") != ("overrides" in raw):
        raise fail("overrides is required with effect allow and allowed only there")
    if "named" in raw and effect != "exclude":
        raise fail("named is allowed only with effect exclude")
    for key in ("reason", "component", "model_value", "runtime_value"):
        try:
            templates.check(raw.get(key, ""), FIELDS)
        except ValueError as err:
            raise fail(f"{key}: {err}") from None
    try:
        templates.check(raw.get("advisory", ""), (*FIELDS, "reason"))
    except ValueError as err:
        raise fail(f"advisory: {err}") from None
    tests = []
    for i, test in enumerate(raw.get("tests", [])):
        unknown = sorted(set(test["facts"]) - set(FIELDS))
        if unknown:
            raise fail(f"tests[{i}]: unknown fact field {', '.join(unknown)}")
        tests.append(RuleTest(name=test.get("name", f"tests[{i}]"), facts=test["facts"], expect=test["expect"]))
    return Rule(
        id=rule_id,
        order=raw["order"],
        applies_to=raw["applies_to"],
        effect=effect,
        condition=condition,
        fields=used,
        reason=raw["reason"],
        component=raw.get("component", ""),
        model_value=raw.get("model_value", ""),
        runtime_value=raw.get("runtime_value", ""),
        advisory=raw.get("advisory", ""),
        points=raw.get("points", 0),
        tests=tuple(tests),
        source=source,
        line=line,
        named=raw.get("named", "warn"),
        overrides=tuple(raw.get("overrides", ())),
    )


def _apply_allows(rules: list[Rule], whens: Mapping[str, Mapping[str, Any]]) -> list[Rule]:
    """Each rule an allow rule overrides, with "and not the allow rule's condition" added."""
    by_id = {r.id: r for r in rules}
    waivers: dict[str, list[Rule]] = {}
    for allow in (r for r in rules if r.effect == "allow"):
        for target_id in allow.overrides:
            target = by_id.get(target_id)
            if target is None:
                reason = f"overrides unknown rule {target_id}"
            elif target.effect not in FIRST_MATCH_GROUPS:
                reason = (
                    f"overrides {target_id}, whose effect {target.effect} cannot be overridden (exclude, reject, skip)"
                )
            elif allow.applies_to == "entry" and target.applies_to == "runtime":
                reason = f"applies_to entry but overrides {target_id}, which applies to runtime"
            else:
                waivers.setdefault(target_id, []).append(allow)
                continue
            raise RuleFileError(allow.source, reason, allow.id, allow.line)
    out = []
    for rule in rules:
        if rule.id in waivers:
            when = {"all": [whens[rule.id], *(negate(whens[a.id]) for a in waivers[rule.id])]}
            condition, used = compile_condition(when)
            rule = dataclasses.replace(rule, condition=condition, fields=used)
        out.append(rule)
    return out


def _settings(
    found: dict[str, tuple[str, Any]], directory: Path
) -> tuple[dict[str, str], Scoring, tuple[RankKey, ...]]:
    messages: dict[str, str] = found.get("messages", ("", {}))[1]
    for key, variables in MESSAGE_VARIABLES.items():
        if key not in messages:
            raise RuleFileError(str(directory), f"messages: {key} is not defined in any rule file")
        try:
            templates.check(messages[key], variables)
        except ValueError as err:
            raise RuleFileError(found["messages"][0], f"messages.{key}: {err}") from None
    unknown = sorted(set(messages) - set(MESSAGE_VARIABLES))
    if unknown:
        raise RuleFileError(found["messages"][0], f"messages: unknown key {', '.join(unknown)}")
    for key in ("scoring", "ranking"):
        if key not in found:
            raise RuleFileError(str(directory), f"{key} is not declared in any rule file")
    raw_scoring = found["scoring"][1]
    scoring = Scoring(
        default_weight=raw_scoring["default_weight"],
        default_priority=raw_scoring["default_priority"],
        add=tuple(raw_scoring["add"]),
        multiply_by=raw_scoring["multiply_by"],
    )
    ranking = tuple(
        RankKey(key=k["key"], direction=k.get("direction", "asc"), order=tuple(k.get("order", ())))
        for k in found["ranking"][1]
    )
    return messages, scoring, ranking


def load_policy(directory: Path) -> Policy:
    """Read, validate and merge every rule file of ``directory`` (not its subdirectories)."""
    if not directory.is_dir():
        raise RuleFileError(str(directory), "rules directory does not exist")
    rules: list[Rule] = []
    whens: dict[str, Mapping[str, Any]] = {}
    settings: dict[str, tuple[str, Any]] = {}
    digest = hashlib.sha256()
    files = rule_files(directory)
    if not files:
        raise RuleFileError(str(directory), "no rule files (*.yaml) in the rules directory")
    for path in files:
        doc, lines, text = _read(path)
        digest.update(path.name.encode() + b"\0" + text.encode() + b"\0")
        for i, raw in enumerate(doc.get("rules", [])):
            rules.append(_rule(raw, str(path), lines[i] if i < len(lines) else 0))
            whens.setdefault(raw["id"], raw["when"])
        for key in ("messages", "scoring", "ranking"):
            if key in doc:
                if key in settings and key != "messages":
                    raise RuleFileError(str(path), f"{key} is already declared in {settings[key][0]}")
                if key == "messages" and key in settings:
                    clash = sorted(set(settings[key][1]) & set(doc[key]))
                    if clash:
                        raise RuleFileError(
                            str(path), f"messages {', '.join(clash)} already defined in {settings[key][0]}"
                        )
                    settings[key] = (settings[key][0], {**settings[key][1], **doc[key]})
                else:
                    settings[key] = (str(path), doc[key])
    seen: dict[str, Rule] = {}
    orders: dict[tuple[str, int], Rule] = {}
    for rule in rules:
        if rule.id in seen:
            raise RuleFileError(rule.source, f"duplicate rule id (also in {seen[rule.id].source})", rule.id, rule.line)
        seen[rule.id] = rule
        if (rule.group, rule.order) in orders:
            other = orders[(rule.group, rule.order)]
            raise RuleFileError(rule.source, f"order {rule.order} is also used by rule {other.id}", rule.id, rule.line)
        orders[(rule.group, rule.order)] = rule
    rules = _apply_allows(rules, whens)
    messages, scoring, ranking = _settings(settings, directory)
    return Policy(
        revision=digest.hexdigest()[:12],
        rules=tuple(sorted(rules, key=lambda r: r.order)),
        messages=messages,
        scoring=scoring,
        ranking=ranking,
        sources=tuple(str(p) for p in files),
    )
