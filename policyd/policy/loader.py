"""Load a rules directory into a Policy, or refuse it with file, rule id, line and reason."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from policyd.errors import InvalidInput
from policyd.facts.fields import CORE_FIELDS, FIELDS, fields_of
from policyd.facts.scoring import Scoring
from policyd.policy import templates
from policyd.policy.conditions import ConditionError, Fields, compile_condition, negate
from policyd.policy.effects import (
    DECIDING,
    EFFECTS,
    GROUPED,
    KINDED,
    NAMED_ACTIONS,
    OUTCOMES,
    WAIVABLE,
    scope_effects,
)
from policyd.policy.messages import MESSAGE_VARIABLES
from policyd.policy.model import (
    EntriesReason,
    FieldDefault,
    Group,
    Policy,
    RankKey,
    RefusalKind,
    Rule,
    RuleTest,
)
from policyd.records import BOOL, ENTRY, RUNTIME
from policyd.resources import safe_yaml
from policyd.textfiles import read_text

RULE_FILE_SUFFIXES = (".yaml", ".yml")
MAX_RULE_FILE_BYTES = 16 << 20
# package data: policyd/rules links to the checkout's rules/, and a wheel ships them there
BUNDLED_RULES = (Path(__file__).resolve().parents[1] / "rules").resolve()
SETTINGS = ("messages", "kinds", "scoring", "ranking", "selection")
OPTIONAL_SETTINGS = ("defaults",)  # a policy without them defaults nothing


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
    # the effects' names are policyd/policy/effects.py's, not written again here
    settings, defs = loaded["properties"], loaded["$defs"]
    excluded = [e for e in EFFECTS if e in DECIDING]
    settings["selection"]["properties"]["listed_as_excluded"]["items"]["enum"] = excluded
    defs["rule"]["properties"]["effect"]["enum"] = list(EFFECTS)
    settings["kinds"]["additionalProperties"]["properties"]["when_named"]["enum"] = list(NAMED_ACTIONS)
    defs["group"]["properties"]["effect"]["enum"] = list(GROUPED)
    defs["test"]["properties"]["expect"]["properties"]["effect"]["enum"] = list(OUTCOMES)
    return loaded


def _item_lines(text: str) -> dict[str, list[int]]:
    """1-based line of each item of the top-level ``rules`` and ``groups`` lists."""
    node = yaml.compose(text, Loader=safe_yaml.BASE_LOADER)
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {
        key.value: [item.start_mark.line + 1 for item in value.value]
        for key, value in node.value
        if key.value in ("rules", "groups") and isinstance(value, yaml.SequenceNode)
    }


def rule_files(directory: Path) -> list[Path]:
    """The directory's rule files; RuleFileError for one that is a symlink loop (is_file calls it
    no file, and skipping it would serve the rules without it as if nothing were wrong)."""
    found = []
    for path in directory.iterdir():
        if path.suffix not in RULE_FILE_SUFFIXES:
            continue
        if path.is_file():
            found.append(path)
        elif _loops(path):
            raise RuleFileError(str(path), "symlink loop")
    return sorted(found)


def _loops(path: Path) -> bool:
    try:
        path.stat()
    except OSError as err:
        return err.errno == errno.ELOOP
    return False


RuleText = tuple[str, str]  # a rule file's name (as errors name it) and its content


def directory_texts(directory: Path) -> list[RuleText]:
    """The rule files of a directory, read; RuleFileError when there are none."""
    if not directory.is_dir():
        raise RuleFileError(
            str(directory),
            "rules directory is a symlink loop" if _loops(directory) else "rules directory does not exist",
        )
    files = rule_files(directory)
    if not files:
        raise RuleFileError(str(directory), "no rule files (*.yaml) in the rules directory")
    return [(str(path), _text(path)) for path in files]


def _text(path: Path) -> str:
    try:
        return read_text(path, MAX_RULE_FILE_BYTES)
    except InvalidInput as err:
        raise RuleFileError(err.field, err.message) from None


def _read(name: str, text: str) -> tuple[dict[str, Any], dict[str, list[int]]]:
    if len(text.encode()) > MAX_RULE_FILE_BYTES:
        raise RuleFileError(name, f"is more than the limit of {MAX_RULE_FILE_BYTES:,} bytes")
    try:
        doc = safe_yaml.load_one(text, "")  # limits first: the line numbers below compose the text again
        lines = _item_lines(text)
    except InvalidInput as err:
        line = err.line if isinstance(err, safe_yaml.YamlRefused) else 0
        raise RuleFileError(name, str(err), line=line) from None
    doc = {} if doc is None else doc
    validator = jsonschema.Draft202012Validator(schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        path_items = list(error.absolute_path)
        item_id, line = "", 0
        if len(path_items) >= 2 and path_items[0] in ("rules", "groups") and isinstance(path_items[1], int):
            index = path_items[1]
            item = doc[path_items[0]][index]
            item_id = str(item.get("id", f"#{index}")) if isinstance(item, dict) else f"#{index}"
            found = lines.get(str(path_items[0]), [])
            line = found[index] if index < len(found) else 0
        location = ".".join(str(p) for p in path_items) or "(top level)"
        raise RuleFileError(name, f"schema: {location}: {error.message}", item_id, line)
    return doc, lines


def _templates(raw: Mapping[str, Any], keys: Sequence[str], allowed: Sequence[str], fail: Any) -> None:
    for key in keys:
        try:
            templates.check(raw.get(key, ""), allowed)
        except ValueError as err:
            raise fail(f"{key}: {err}") from None


def _tests(raw: Mapping[str, Any], scope: str, fail: Any, fields: Fields) -> tuple[RuleTest, ...]:
    visible = fields_of(scope, fields)
    entry_fields = fields_of(ENTRY, fields)
    tests = []
    for i, test in enumerate(raw.get("tests", [])):
        named = {*test["facts"], *(k for e in test.get("entries", []) for k in e)}
        unknown = sorted(named - set(fields))
        if unknown:
            raise fail(f"tests[{i}]: unknown fact field {', '.join(unknown)}")
        foreign = sorted(set(test["facts"]) - set(visible))
        foreign += sorted({k for e in test.get("entries", []) for k in e} - set(entry_fields))
        if foreign:
            raise fail(f"tests[{i}]: fact field {', '.join(foreign)} is not a field of {scope} records")
        if test.get("entries") and scope != ENTRY:
            raise fail(f"tests[{i}]: entries are given only to tests of entry groups")
        tests.append(
            RuleTest(
                name=test.get("name", f"tests[{i}]"),
                facts=test["facts"],
                expect=test["expect"],
                entries=tuple(test.get("entries", ())),
            )
        )
    return tuple(tests)


def _rule(raw: Mapping[str, Any], source: str, line: int, fields: Fields) -> Rule:
    rule_id, scope, effect = raw["id"], raw["applies_to"], raw["effect"]

    def fail(reason: str) -> RuleFileError:
        return RuleFileError(source, reason, rule_id, line)

    if effect not in scope_effects(scope):
        raise fail(f"a rule that applies to {scope} takes effect {' or '.join(scope_effects(scope))}, not {effect}")
    visible = fields_of(scope, fields)
    try:
        condition, used = compile_condition(raw["when"], fields)
    except ConditionError as err:
        raise fail(f"when: {err}") from None
    foreign = sorted(f for f in used if f not in visible)
    if foreign:
        raise fail(f"applies to {scope} but tests {', '.join(foreign)}, which {scope} records do not carry")
    if scope == RUNTIME and effect == "refuse":
        request_bound = sorted(f for f in used if fields[f].scope != RUNTIME or not fields[f].intrinsic)
        if request_bound:
            # the catalog refuses such a runtime on its own, before any request
            raise fail(f"a runtime refusal tests the runtime alone, not {', '.join(request_bound)}")
    for each in EFFECTS.values():
        if each.requires and (effect == each.name) != (each.requires in raw):
            raise fail(f"{each.requires} is required with effect {each.name} and allowed only there")
    if "kind" in raw and effect not in KINDED:
        kinded = [e for e in EFFECTS if e in KINDED]
        said = f"{', '.join(kinded[:-1])} or {kinded[-1]}"
        raise fail(f"kind is declared only on rules that {said}, not {effect}")
    _templates(
        raw,
        ("reason", "refusal", "condition_message", "field", "component", "model_value", "runtime_value"),
        list(visible),
        fail,
    )
    _templates(raw, ("advisory",), [*visible, "reason"], fail)
    return Rule(
        id=rule_id,
        order=raw["order"],
        applies_to=scope,
        effect=effect,
        kind=raw.get("kind", ""),
        group=raw.get("group", ""),
        when=raw["when"],
        condition=condition,
        fields=used,
        reason=raw["reason"],
        refusal=raw.get("refusal", ""),
        condition_message=raw.get("condition_message", ""),
        admission=raw.get("admission", True) is not False,
        needs_engine=raw.get("admission") in ("engine", "selection"),
        in_selection=raw.get("admission") == "selection",
        field=raw.get("field", ""),
        component=raw.get("component", ""),
        model_value=raw.get("model_value", ""),
        runtime_value=raw.get("runtime_value", ""),
        advisory=raw.get("advisory", ""),
        points=raw.get("points", 0),
        overrides=tuple(raw.get("overrides", ())),
        severity=raw.get("severity", ""),
        tests=_tests(raw, scope, fail, fields),
        source=source,
        line=line,
    )


def _group(raw: Mapping[str, Any], source: str, line: int, fields: Fields) -> Group:
    group_id, scope = raw["id"], raw["applies_to"]

    def fail(reason: str) -> RuleFileError:
        return RuleFileError(source, f"group: {reason}", group_id, line)

    if raw["effect"] not in scope_effects(scope):
        raise fail(f"a group that applies to {scope} takes effect {' or '.join(scope_effects(scope))}")
    entries = raw.get("entries")
    if (entries is not None) != (scope == ENTRY):
        raise fail("entries (how several entries' reasons make the runtime's) is declared exactly on entry groups")
    visible = list(fields_of(RUNTIME if scope == ENTRY else scope, fields))
    _templates(raw, ("component",), visible, fail)
    _templates(raw, ("advisory",), [*visible, "reason"], fail)
    if entries is not None:
        _templates(entries, ("empty",), visible, fail)
        _templates(entries, ("reason",), [*visible, "reasons"], fail)
    return Group(
        id=group_id,
        applies_to=scope,
        combine=raw["combine"],
        join=raw.get("join", "; "),
        order=raw["order"],
        entries=EntriesReason(entries["join"], entries["reason"], entries.get("empty", "")) if entries else None,
        effect=raw["effect"],
        kind=raw.get("kind", ""),
        component=raw.get("component", ""),
        advisory=raw.get("advisory", ""),
        tests=_tests(raw, scope, fail, fields),
        source=source,
        line=line,
    )


def _bool_entry_fields(names: Sequence[str], where: str, file: str) -> tuple[str, ...]:
    for name in names:
        spec = CORE_FIELDS.get(name)  # entry facts are the core's alone (a backend declares none)
        if spec is None or spec.scope != ENTRY or spec.type != BOOL:
            raise RuleFileError(file, f"{where}: {name!r} is not a boolean entry fact")
    return tuple(names)


def _scoring(raw: Mapping[str, Any], file: str) -> Scoring:
    matched = raw["matched_entry"]
    zero = raw.get("zero_weight", {})
    return Scoring(
        default_weight=raw["default_weight"],
        zero_format_weight=zero.get("format_weight", 0),
        zero_framework_weight=zero.get("framework_weight", 0),
        default_priority=raw["default_priority"],
        add=tuple(raw["add"]),
        multiply_by=raw["multiply_by"],
        count=_bool_entry_fields(raw["count"], "scoring.count", file),
        matched_count=_bool_entry_fields(matched["count"], "scoring.matched_entry.count", file),
        matched_auto_selected=_bool_entry_fields(
            matched.get("when_auto_selected", []), "scoring.matched_entry.when_auto_selected", file
        ),
        matched_priority=matched.get("priority", "entry"),
    )


Found = dict[str, tuple[str, Any]]  # setting -> (file, value)


def _collect_settings(found: Found, doc: Mapping[str, Any], path: Path) -> None:
    for key in (*SETTINGS, *OPTIONAL_SETTINGS):
        if key not in doc:
            continue
        if key in ("messages", "kinds") and key in found:
            clash = sorted(set(found[key][1]) & set(doc[key]))
            if clash:
                raise RuleFileError(str(path), f"{key} {', '.join(clash)} already defined in {found[key][0]}")
            found[key] = (found[key][0], {**found[key][1], **doc[key]})
        elif key in found:
            raise RuleFileError(str(path), f"{key} is already declared in {found[key][0]}")
        else:
            found[key] = (str(path), doc[key])


def _messages(found: Found, directory: Path) -> dict[str, str]:
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
    return messages


@dataclass(frozen=True)
class _Settings:
    messages: dict[str, str]
    kinds: dict[str, RefusalKind]
    scoring: Scoring
    ranking: tuple[RankKey, ...]
    listed: frozenset[str]
    none_selectable: str
    defaults: tuple[FieldDefault, ...]


def _defaults(found: Found) -> tuple[FieldDefault, ...]:
    declared: Mapping[str, Mapping[str, Any]] = found.get("defaults", ("", {}))[1]
    return tuple(
        FieldDefault(component, name, spec["value"], spec["when"])
        for component, fields in declared.items()
        for name, spec in fields.items()
    )


def _settings(found: Found, directory: Path) -> _Settings:
    for key in SETTINGS:
        if key not in found:
            raise RuleFileError(str(directory), f"{key} is not declared in any rule file")
    kinds = {
        name: RefusalKind(name, k["when_named"], k["condition_reason"], k.get("event_reason", ""), k.get("refusal", ""))
        for name, k in found["kinds"][1].items()
    }
    ranking = tuple(
        RankKey(key=k["key"], direction=k.get("direction", "asc"), order=tuple(k.get("order", ())))
        for k in found["ranking"][1]
    )
    selection = found["selection"][1]
    if selection["none_selectable"] not in kinds:
        raise RuleFileError(
            found["selection"][0], f"selection.none_selectable: kind {selection['none_selectable']} is not declared"
        )
    return _Settings(
        messages=_messages(found, directory),
        kinds=kinds,
        scoring=_scoring(found["scoring"][1], found["scoring"][0]),
        ranking=ranking,
        listed=frozenset(selection["listed_as_excluded"]),
        none_selectable=selection["none_selectable"],
        defaults=_defaults(found),
    )


def _link(rules: list[Rule], groups: list[Group], kinds: Mapping[str, RefusalKind]) -> list[Rule]:
    """Check each rule's group and kind, and give rules in a group the group's kind."""
    by_id = {g.id: g for g in groups}
    linked = []
    for rule in rules:
        kind = rule.kind
        if rule.group:
            group = by_id.get(rule.group)
            if group is None:
                raise RuleFileError(rule.source, f"group {rule.group!r} is not declared", rule.id, rule.line)
            if (group.applies_to, group.effect) != (rule.applies_to, rule.effect):
                raise RuleFileError(
                    rule.source,
                    f"group {group.id} gathers {group.applies_to} rules with effect {group.effect}",
                    rule.id,
                    rule.line,
                )
            if kind and kind != group.kind:
                raise RuleFileError(rule.source, f"kind {kind} differs from group {group.id}'s", rule.id, rule.line)
            kind = group.kind
        elif rule.applies_to == ENTRY and rule.effect == "exclude":
            raise RuleFileError(
                rule.source,
                "an entry exclusion belongs to a group declaring how entries' reasons combine",
                rule.id,
                rule.line,
            )
        if rule.effect in KINDED:
            if not kind:
                raise RuleFileError(rule.source, f"effect {rule.effect} needs a kind", rule.id, rule.line)
            if kind not in kinds:
                known = ", ".join(sorted(kinds))
                raise RuleFileError(rule.source, f"kind {kind} is not declared (kinds: {known})", rule.id, rule.line)
        linked.append(rule if kind == rule.kind else Rule(**{**rule.__dict__, "kind": kind}))
    for group in groups:
        if group.effect in KINDED and group.kind not in kinds:
            raise RuleFileError(
                group.source, f"group: kind {group.kind or '(none)'} is not declared", group.id, group.line
            )
    return linked


def _apply_allows(rules: Sequence[Rule], fields: Fields) -> list[Rule]:
    """Each rule an allow rule overrides, with "and not the allow rule's condition" added to its own."""
    by_id = {r.id: r for r in rules}
    waivers: dict[str, list[Rule]] = {}
    for allow in (r for r in rules if r.effect == "allow"):
        for target_id in allow.overrides:
            target = by_id.get(target_id)
            if target is None:
                reason = f"overrides unknown rule {target_id}"
            elif target.effect not in WAIVABLE:
                reason = f"overrides {target_id}, whose effect {target.effect} cannot be overridden"
            elif not allow.fields <= set(fields_of(target.applies_to, fields)):
                reason = (
                    f"applies to {allow.applies_to} but overrides {target_id}, which applies to {target.applies_to}"
                )
            else:
                waivers.setdefault(target_id, []).append(allow)
                continue
            raise RuleFileError(allow.source, reason, allow.id, allow.line)
    out = []
    for rule in rules:
        if rule.id in waivers:
            when = {"all": [rule.when, *(negate(a.when) for a in waivers[rule.id])]}
            condition, used = compile_condition(when, fields)
            rule = dataclasses.replace(rule, condition=condition, fields=used)
        out.append(rule)
    return out


def _unique(rules: Sequence[Rule], groups: Sequence[Group]) -> None:
    ids: dict[str, str] = {}
    orders: dict[int, str] = {}
    items: list[Rule | Group] = [*rules, *groups]
    for item in items:
        if item.id in ids:
            raise RuleFileError(item.source, f"duplicate id (also in {ids[item.id]})", item.id, item.line)
        ids[item.id] = item.source
        if item.order in orders:
            raise RuleFileError(
                item.source, f"order {item.order} is also used by {orders[item.order]}", item.id, item.line
            )
        orders[item.order] = item.id


@dataclass
class _Read:
    fields: Fields  # the fact catalogue the rules are compiled against
    rules: list[Rule]
    groups: list[Group]
    found: Found
    files: list[str]


def _read_texts(texts: Sequence[RuleText], read: _Read, digest: Any) -> None:
    for name, text in texts:
        doc, lines = _read(name, text)
        digest.update(Path(name).name.encode() + b"\0" + text.encode() + b"\0")
        at = lines.get("rules", [])
        read.rules.extend(
            _rule(raw, name, at[i] if i < len(at) else 0, read.fields) for i, raw in enumerate(doc.get("rules", []))
        )
        at = lines.get("groups", [])
        read.groups.extend(
            _group(raw, name, at[i] if i < len(at) else 0, read.fields) for i, raw in enumerate(doc.get("groups", []))
        )
        _collect_settings(read.found, doc, Path(name))
        read.files.append(name)


def _declares(texts: Sequence[RuleText]) -> bool:
    return any(key in _read(name, text)[0] for name, text in texts for key in SETTINGS)


def declares_settings(directory: Path) -> bool:
    """Whether the directory is a whole policy (it declares settings), not a set of extra rules."""
    return _declares([(str(path), path.read_text()) for path in rule_files(directory)])


def load_policy(directory: Path, beside: Path | None = None, fields: Fields = FIELDS) -> Policy:
    """Read, validate and merge every rule file of ``directory`` (not its subdirectories).
    With ``beside``, a directory that declares no settings is a set of extra rules: they
    join the policy in ``beside`` (its rules and settings), as they would when copied there.
    ``fields``: the fact catalogue of the engine backends the policy is for (the registry's)."""
    return load_policy_texts(directory_texts(directory), str(directory), beside, fields)


def load_policy_texts(
    texts: Sequence[RuleText], where: str, beside: Path | None = None, fields: Fields = FIELDS
) -> Policy:
    """``load_policy`` of rule files given by name and content (``where`` names them as a whole)."""
    read = _Read(fields, [], [], {}, [])
    digest = hashlib.sha256()
    if beside is not None and not _declares(texts):
        _read_texts(directory_texts(beside), read, digest)
    _read_texts(texts, read, digest)
    settings = _settings(read.found, Path(where))
    _unique(read.rules, read.groups)
    linked = _apply_allows(_link(read.rules, read.groups, settings.kinds), fields)
    return Policy(
        revision=digest.hexdigest()[:12],
        rules=tuple(sorted(linked, key=lambda r: r.order)),
        groups=tuple(sorted(read.groups, key=lambda g: g.order)),
        kinds=settings.kinds,
        messages=settings.messages,
        scoring=settings.scoring,
        ranking=settings.ranking,
        listed=settings.listed,
        none_selectable=settings.none_selectable,
        sources=tuple(read.files),
        defaults=settings.defaults,
        fields=fields,
    )
