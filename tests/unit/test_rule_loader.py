"""The rule loader refuses a rules directory it cannot serve, naming the file, the rule id and the
line; the bundled rules/ load and every test stored with them passes. And a rule file is data:
it cannot make the daemon execute code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyd.errors import InvalidInput
from policyd.facts.fields import FIELDS, neutral_record
from policyd.policy import templates
from policyd.policy.loader import RuleFileError, load_policy
from policyd.policy.messages import MESSAGE_VARIABLES
from policyd.policy.revision import build_revision
from policyd.policy.selftest import run_tests
from policyd.resources import safe_yaml
from policyd.resources.manifests import load_documents

from .builders import RULES, copy_rules, default_revision

DURABLE_OPERATORS = {"$and", "$or", "$neq", "$lt", "$lte", "$gt", "$gte", "$iany", "$iall", "$i", "$m"}


def line_of(path: Path, needle: str) -> int:
    """1-based line of the first line containing ``needle``."""
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if needle in text:
            return number
    raise LookupError(f"{needle!r} not in {path}")


def replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} is not unique in {path}"
    path.write_text(text.replace(old, new))


def append_rule(path: Path, rule: str) -> int:
    """Append a rule (YAML text of one ``rules`` item, indented as in the bundled files) to a
    file that has a top-level ``rules`` list at its end; returns the line of its ``- id:``."""
    text = path.read_text()
    if not text.endswith("\n"):
        text += "\n"
    line = text.count("\n") + 2
    path.write_text(text + "\n" + rule.strip("\n") + "\n")
    return line


def load_error(directory: Path) -> RuleFileError:
    with pytest.raises(RuleFileError) as err:
        load_policy(directory)
    return err.value


def build_error(directory: Path) -> RuleFileError:
    with pytest.raises(RuleFileError) as err:
        build_revision(directory)
    return err.value


RULE = """
  - id: {id}
    order: {order}
    applies_to: {applies_to}
    effect: {effect}
{kind}    when: {when}
    reason: "{reason}"
"""


def rule_text(
    rule_id: str = "extra-rule",
    order: int = 990,
    applies_to: str = "runtime",
    effect: str = "exclude",
    when: str = "{runtime_disabled: true}",
    reason: str = "extra",
) -> str:
    kind = "    kind: Advisory\n" if effect in ("exclude", "reject", "refuse") else ""
    return RULE.format(
        id=rule_id, order=order, applies_to=applies_to, effect=effect, kind=kind, when=when, reason=reason
    )


# -- the bundled rules ------------------------------------------------------------------------------


def stored_tests() -> int:
    count = 0
    for path in RULES.glob("*.yaml"):
        doc = yaml.safe_load(path.read_text())
        count += sum(len(item.get("tests", [])) for item in (*doc.get("rules", []), *doc.get("groups", [])))
    return count


def test_build_revision_on_the_bundled_rules_runs_every_stored_test() -> None:
    revision = build_revision(RULES)
    assert revision.tests_run == stored_tests() > 0
    count, failures = run_tests(revision.policy, revision.engine)
    assert count == revision.tests_run
    assert failures == []


def test_the_bundled_rules_define_every_message_and_sort_rules_by_order() -> None:
    policy = default_revision().policy
    assert set(policy.messages) == set(MESSAGE_VARIABLES)
    orders = [r.order for r in policy.rules]
    assert orders == sorted(orders)
    assert len(policy.revision) == 12
    assert {Path(s).name for s in policy.sources} == {p.name for p in RULES.glob("*.yaml")}


def test_the_revision_id_follows_the_rule_files_content(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    same = load_policy(directory).revision
    assert same == default_revision().id
    replace(directory / "10-runtime.yaml", "reason: runtime is disabled\n", "reason: runtime is switched off\n")
    assert load_policy(directory).revision != same


# -- refusals with file, rule id and line ---------------------------------------------------------------


def test_invalid_yaml_is_refused_with_file_and_line(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "10-runtime.yaml"
    line = line_of(path, "reason: runtime is disabled")
    replace(path, "    reason: runtime is disabled\n", "    reason: runtime is: disabled: [oops\n")
    err = load_error(directory)
    assert (err.file, err.line) == (str(path), line)
    assert err.reason.startswith("not valid YAML")
    assert str(err).startswith(f"{path}:{line}: not valid YAML")


def test_a_schema_violation_names_the_rule_and_its_line(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "10-runtime.yaml"
    replace(path, "    order: 100\n", "    order: 100\n    severity: high\n")
    err = load_error(directory)
    assert (err.file, err.rule_id, err.line) == (str(path), "runtime-disabled", line_of(path, "- id: runtime-disabled"))
    assert "schema" in err.reason and "severity" in err.reason
    assert str(err).startswith(f"{path}:{err.line}: rule runtime-disabled: schema")


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("    effect: reject\n    kind: ValidationError\n", "    effect: block\n    kind: ValidationError\n", "block"),
        ("    order: 100\n", "    order: first\n", "first"),
        ("  - id: runtime-disabled\n", "  - id: Runtime_Disabled\n", "Runtime_Disabled"),
    ],
)
def test_other_schema_violations_are_refused(tmp_path: Path, old: str, new: str, words: str) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "10-runtime.yaml"
    replace(path, old, new)
    err = load_error(directory)
    assert err.file == str(path) and err.line == line_of(path, "- id: ") and words in err.reason


def test_an_unknown_fact_field_is_refused_with_rule_and_line(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "90-selection.yaml"
    replace(path, "when: {runtime_auto_select: false}", "when: {runtime_autoselect: false}")
    err = load_error(directory)
    assert (err.rule_id, err.line) == ("no-auto-select-entry", line_of(path, "- id: no-auto-select-entry"))
    assert "unknown fact field 'runtime_autoselect'" in err.reason


def test_an_unknown_placeholder_in_a_reason_template_is_refused(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "20-formats.yaml"
    replace(
        path,
        'quantization mismatch (model={model_quantization}, runtime={entry_quantization})"',
        'quantization mismatch (model={model_quant}, runtime={entry_quantization})"',
    )
    err = load_error(directory)
    assert (err.file, err.rule_id, err.line) == (
        str(path),
        "quantization-mismatch",
        line_of(path, "- id: quantization-mismatch"),
    )
    assert err.reason == "reason: unknown placeholder {model_quant}"


@pytest.mark.parametrize("key", ["component", "model_value", "runtime_value", "advisory"])
def test_unknown_placeholders_are_refused_in_every_template_of_a_rule(tmp_path: Path, key: str) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "10-runtime.yaml"
    line = append_rule(path, rule_text() + f'    {key}: "{{no_such_fact}}"\n')
    err = load_error(directory)
    assert (err.rule_id, err.line) == ("extra-rule", line)
    assert err.reason == f"{key}: unknown placeholder {{no_such_fact}}"


def test_a_duplicate_rule_id_is_refused_at_its_second_definition(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "90-selection.yaml"
    text = path.read_text()
    path.write_text(text.replace("\nscoring:", rule_text("runtime-disabled", 995) + "\nscoring:", 1))
    err = load_error(directory)
    assert (err.file, err.rule_id, err.line) == (str(path), "runtime-disabled", line_of(path, "- id: runtime-disabled"))
    assert err.reason == f"duplicate id (also in {directory / '10-runtime.yaml'})"


def test_a_duplicate_order_is_refused(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "10-runtime.yaml"
    replace(path, "    order: 300\n", "    order: 200\n")
    err = load_error(directory)
    assert (err.rule_id, err.line) == ("engine-deployment-mode", line_of(path, "- id: engine-deployment-mode"))
    assert err.reason == "order 200 is also used by accelerator-class-not-listed"


def test_orders_are_one_sequence_across_effects_scopes_and_groups(tmp_path: Path) -> None:
    # "the first reason in rule order" compares rules of every effect with the groups
    directory = copy_rules(tmp_path)
    append_rule(directory / "10-runtime.yaml", rule_text("extra-bonus", order=400, effect="score") + "    points: 1\n")
    err = load_error(directory)
    assert (err.rule_id, err.reason) == ("supported-formats", "order 400 is also used by extra-bonus")


def test_a_failing_rule_test_is_refused_with_file_rule_and_line(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "10-runtime.yaml"
    replace(
        path,
        "expect: {rule: runtime-disabled, effect: reject, kind: ValidationError, reason: runtime is disabled}",
        "expect: {rule: runtime-disabled, effect: reject, kind: ValidationError, reason: runtime is off}",
    )
    load_policy(directory)  # loading alone does not run the tests
    err = build_error(directory)
    assert (err.file, err.rule_id, err.line) == (str(path), "runtime-disabled", line_of(path, "- id: runtime-disabled"))
    assert "reason 'runtime is disabled', expected 'runtime is off'" in err.reason


def test_a_rule_test_with_an_unknown_fact_field_is_refused(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "10-runtime.yaml"
    replace(path, "      - facts: {runtime_disabled: false}\n", "      - facts: {runtime_disabld: false}\n")
    err = load_error(directory)
    assert err.rule_id == "runtime-disabled"
    assert err.reason == "tests[1]: unknown fact field runtime_disabld"


def test_a_missing_message_key_is_refused(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "messages.yaml"
    text = path.read_text()
    path.write_text("".join(line for line in text.splitlines(True) if not line.startswith("  auto_selected:")))
    err = load_error(directory)
    assert err.file == str(directory)
    assert err.reason == "messages: auto_selected is not defined in any rule file"


def test_an_unknown_message_key_and_an_unknown_message_variable_are_refused(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "messages.yaml"
    path.write_text(path.read_text() + '  auto_selekted: "x"\n')
    err = load_error(directory)
    assert (err.file, err.reason) == (str(path), "messages: unknown key auto_selekted")

    directory = copy_rules(tmp_path / "again")
    path = directory / "messages.yaml"
    replace(path, "will be auto-selected for model {model_name}", "will be auto-selected for {isvc_name}")
    err = load_error(directory)
    assert (err.file, err.reason) == (str(path), "messages.auto_selected: unknown placeholder {isvc_name}")


def test_a_message_defined_in_two_files_is_refused(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    (directory / "zz-more-messages.yaml").write_text('messages:\n  auto_selected: "again"\n')
    err = load_error(directory)
    assert err.file == str(directory / "zz-more-messages.yaml")
    assert err.reason.startswith("messages auto_selected already defined in")


def test_scoring_and_ranking_are_declared_exactly_once(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    (directory / "95-ranking.yaml").write_text("ranking:\n  - {key: name}\n")
    err = load_error(directory)
    assert err.reason == f"ranking is already declared in {directory / '90-selection.yaml'}"

    directory = copy_rules(tmp_path / "again")
    path = directory / "90-selection.yaml"
    path.write_text(path.read_text().split("# An entry scores")[0])
    assert load_error(directory).reason == "scoring is not declared in any rule file"


def test_a_runtime_rule_may_not_test_entry_fields(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    line = append_rule(directory / "10-runtime.yaml", rule_text(when="{entry_auto_select: false}"))
    err = load_error(directory)
    assert (err.rule_id, err.line) == ("extra-rule", line)
    assert err.reason == "applies to runtime but tests entry_auto_select, which runtime records do not carry"


def test_a_runtime_rule_may_not_compare_with_an_entry_field_either(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    when = "{runtime_name: {ne: {fact: entry_architecture}}}"
    line = append_rule(directory / "10-runtime.yaml", rule_text(when=when))
    err = load_error(directory)
    assert (err.rule_id, err.line) == ("extra-rule", line)
    assert "entry_architecture" in err.reason


def test_a_rule_s_effect_must_suit_its_scope(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    append_rule(directory / "10-runtime.yaml", rule_text(applies_to="request", when="{isvc_has_router: true}"))
    assert load_error(directory).reason == "a rule that applies to request takes effect refuse or advise, not exclude"


# a request advisory: a warning about the request itself (rules/00-admission.yaml)
REVISION_UNPINNED = "{named_runtime_revision: {ne: ''}, named_runtime_auto_sync: true}"


@pytest.mark.parametrize(
    ("applies_to", "when", "extra", "template", "reason"),
    [
        (
            "request",
            "{named_runtime_revision: {ne: ''}, runtime_disabled: true}",
            "",
            "extra",
            "applies to request but tests runtime_disabled, which request records do not carry",
        ),
        (
            "model",
            "{model_disabled: true}",
            "",
            "extra",
            "a rule that applies to model takes effect refuse, not advise",
        ),
        (
            "request",
            REVISION_UNPINNED,
            "    kind: Advisory\n",
            "extra",
            "kind is declared only on rules that refuse, exclude or reject, not advise",
        ),
        (
            "request",
            "{named_runtime_auto_sync: 'no'}",
            "",
            "extra",
            "when: named_runtime_auto_sync: expected a boolean value, got 'no'",
        ),
        ("request", REVISION_UNPINNED, "", "{revision}", "reason: unknown placeholder {revision}"),
    ],
)
def test_a_bad_request_advisory_is_refused_with_file_rule_and_line(
    tmp_path: Path, applies_to: str, when: str, extra: str, template: str, reason: str
) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "00-admission.yaml"
    line = append_rule(path, rule_text(applies_to=applies_to, effect="advise", when=when, reason=template) + extra)
    err = load_error(directory)
    assert (err.file, err.rule_id, err.line, err.reason) == (str(path), "extra-rule", line, reason)


def test_a_request_advisory_s_failing_test_is_refused_with_file_rule_and_line(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "00-admission.yaml"
    replace(path, """reason: 'spec.runtime.revision "{named_runtime_revision}" has no""", "reason: 'it has no")
    err = build_error(directory)
    rule_id = "revision-without-autosync-false"
    assert (err.file, err.rule_id, err.line) == (str(path), rule_id, line_of(path, f"- id: {rule_id}"))
    assert "advisories [" in err.reason and "expected [" in err.reason


def test_an_entry_exclusion_must_belong_to_a_group(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    line = append_rule(directory / "20-formats.yaml", rule_text(applies_to="entry", when="{entry_index: 7}"))
    err = load_error(directory)
    assert (err.rule_id, err.line) == ("extra-rule", line)
    assert err.reason == "an entry exclusion belongs to a group declaring how entries' reasons combine"


def test_a_kind_must_be_declared(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    append_rule(directory / "10-runtime.yaml", rule_text().replace("kind: Advisory", "kind: Whatever"))
    err = load_error(directory)
    assert err.rule_id == "extra-rule"
    assert err.reason.startswith("kind Whatever is not declared (kinds: Advisory, ")


def test_a_runtime_refusal_tests_the_runtime_alone(tmp_path: Path) -> None:
    # the catalog refuses such a runtime before any request, so the rule may not depend on one
    directory = copy_rules(tmp_path)
    append_rule(directory / "10-runtime.yaml", rule_text(effect="refuse", when="{size_in_range: false}"))
    assert load_error(directory).reason == "a runtime refusal tests the runtime alone, not size_in_range"
    # nor on the catalog's other objects: a fact read from the catalog changes with them
    directory = copy_rules(tmp_path / "catalog")
    append_rule(directory / "10-runtime.yaml", rule_text(effect="refuse", when="{accelerator_memory_min_gib: 16}"))
    assert load_error(directory).reason == "a runtime refusal tests the runtime alone, not accelerator_memory_min_gib"


def test_a_rule_in_a_group_shares_its_scope_and_effect(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    append_rule(directory / "10-runtime.yaml", rule_text() + "    group: supported-formats\n")
    assert load_error(directory).reason == "group supported-formats gathers entry rules with effect exclude"


def test_a_directory_of_extra_rules_joins_the_bundled_rules(tmp_path: Path) -> None:
    # as it would serve once copied beside them: with their settings, and their rules to refer to
    (tmp_path / "extra.yaml").write_text("rules:" + rule_text(when="{runtime_kind: Nope}"))
    assert load_error(tmp_path).reason == "messages is not declared in any rule file"
    policy = load_policy(tmp_path, RULES)
    assert {r.id for r in policy.rules} == {r.id for r in default_revision().policy.rules} | {"extra-rule"}
    assert policy.messages == default_revision().policy.messages
    # a whole policy stands alone
    assert load_policy(RULES, tmp_path).revision == default_revision().id


def test_points_go_with_score_rules_only(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    append_rule(directory / "10-runtime.yaml", rule_text(effect="score"))
    assert load_error(directory).reason == "points is required with effect score and allowed only there"


def test_a_finding_has_a_severity_and_only_a_finding_has_one(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    append_rule(directory / "70-lint.yaml", rule_text(applies_to="lint_runtime", effect="finding"))
    assert load_error(directory).reason == "severity is required with effect finding and allowed only there"
    directory = copy_rules(tmp_path / "again")
    append_rule(directory / "10-runtime.yaml", rule_text() + "    severity: warning\n")
    assert load_error(directory).reason == "severity is required with effect finding and allowed only there"


def test_lint_rules_only_report_and_other_scopes_never_do(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    append_rule(directory / "70-lint.yaml", rule_text(applies_to="lint_model", when="{lint_model_selectable: 0}"))
    assert (
        load_error(directory).reason == "a rule that applies to lint_model takes effect finding or allow, not exclude"
    )
    directory = copy_rules(tmp_path / "again")
    append_rule(directory / "10-runtime.yaml", rule_text(effect="finding") + "    severity: info\n")
    assert load_error(directory).reason.startswith("a rule that applies to runtime takes effect refuse or exclude")


def test_a_lint_rule_tests_what_the_runtime_is_not_what_a_request_makes_of_it(tmp_path: Path) -> None:
    # lint records describe a runtime and its entries alone: no model was matched against them
    directory = copy_rules(tmp_path)
    rule = rule_text(applies_to="lint_entry", effect="finding", when="{format_name_match: false}")
    append_rule(directory / "70-lint.yaml", rule + "    severity: info\n")
    assert load_error(directory).reason == (
        "applies to lint_entry but tests format_name_match, which lint_entry records do not carry"
    )


def test_a_lint_rule_test_checks_the_severity(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    replace(
        directory / "70-lint.yaml",
        "          rule: ambiguous-tie\n          severity: warning",
        "          rule: ambiguous-tie\n          severity: error",
    )
    err = build_error(directory)
    assert err.rule_id == "ambiguous-tie"
    assert "severity 'warning', expected 'error'" in err.reason


def test_only_yaml_files_at_the_top_of_the_directory_are_rules(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    (directory / "README.md").write_text("not: [a rule file\n")
    (directory / "old").mkdir()
    (directory / "old" / "broken.yaml").write_text("rules: [oops\n")
    assert load_policy(directory).revision == default_revision().id


def test_a_missing_or_empty_rules_directory_is_refused(tmp_path: Path) -> None:
    assert load_error(tmp_path / "nope").reason == "rules directory does not exist"
    assert load_error(tmp_path).reason == "no rule files (*.yaml) in the rules directory"


# -- a rule file cannot make the daemon execute code ---------------------------------------------


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    path = tmp_path / "pwned"
    assert not path.exists()
    return path


def test_python_in_a_condition_value_is_a_plain_string(tmp_path: Path, marker: Path) -> None:
    payload = f"__import__('os').system('touch {marker}')"
    directory = copy_rules(tmp_path)
    rule = rule_text(when=json.dumps({"runtime_name": payload}), reason="named {runtime_name}")
    rule += f"    tests:\n      - facts: {json.dumps({'runtime_name': payload})}\n"
    rule += "        expect: {rule: extra-rule, effect: exclude}\n"
    append_rule(directory / "10-runtime.yaml", rule)
    revision = build_revision(directory)  # stored test included: the payload is compared, never run
    (extra,) = [r for r in revision.policy.rules if r.id == "extra-rule"]
    assert extra.condition == {"runtime_name": payload}
    hit, miss = revision.engine.fire(
        "runtime",
        [{**neutral_record("runtime"), "runtime_name": payload}, {**neutral_record("runtime"), "runtime_name": "x"}],
    )
    assert hit == (extra,) and miss == ()
    assert templates.render(extra.reason, {"runtime_name": payload}) == f"named {payload}"
    assert not marker.exists()


@pytest.mark.parametrize(
    "template",
    [
        "{runtime_name.__class__}",
        "{0.__init__}",
        "{runtime_name.__class__.__mro__[1].__subclasses__}",
        "{runtime_name[0]}",
        "{runtime_name!r}",
        "{runtime_name:>10}",
        "{runtime_name:{model_name}}",
        "{}",
    ],
)
def test_a_reason_template_allows_only_plain_names(tmp_path: Path, template: str) -> None:
    directory = copy_rules(tmp_path)
    line = append_rule(directory / "10-runtime.yaml", rule_text(reason=template))
    err = load_error(directory)
    assert (err.rule_id, err.line) == ("extra-rule", line)
    assert err.reason.startswith("reason: placeholder")
    assert "must be a plain {name}" in err.reason
    with pytest.raises(ValueError):
        templates.placeholders(template)


def test_a_message_template_allows_only_plain_names(tmp_path: Path) -> None:
    directory = copy_rules(tmp_path)
    path = directory / "messages.yaml"
    replace(path, 'for model {model_name}"', 'for model {model_name.__class__.__init__.__globals__}"')
    err = load_error(directory)
    assert err.reason.startswith("messages.auto_selected: placeholder {model_name.__class__")


def test_rendering_prints_values_and_never_looks_inside_them() -> None:
    class Loud:
        def __format__(self, spec: str) -> str:  # pragma: no cover - must not be called
            raise AssertionError("format() was used")

        def __str__(self) -> str:
            return "loud"

    assert templates.render("a {x} b {y}", {"x": Loud(), "y": ["p", "q"]}) == "a loud b p, q"
    assert templates.render("{missing}", {}) == ""


@pytest.mark.parametrize(
    "tagged",
    [
        '!!python/object/apply:os.system ["touch {marker}"]',
        '!!python/object/new:subprocess.Popen [["touch", "{marker}"]]',
        "!!python/name:os.system ''",
        '!!python/object/apply:subprocess.check_call [["touch", "{marker}"]]',
    ],
)
@pytest.mark.parametrize("where", ["condition", "message", "test"])
def test_python_yaml_tags_are_refused_as_invalid_yaml(tmp_path: Path, marker: Path, tagged: str, where: str) -> None:
    value = tagged.format(marker=marker)
    directory = copy_rules(tmp_path)
    if where == "message":
        path = directory / "messages.yaml"
        path.write_text(path.read_text() + f"  extra: {value}\n")
    elif where == "test":
        path = directory / "10-runtime.yaml"
        append_rule(path, rule_text() + f"    tests:\n      - facts: {{runtime_name: {value}}}\n        expect: {{}}\n")
    else:
        path = directory / "10-runtime.yaml"
        append_rule(path, rule_text(when=f"{{runtime_name: {value}}}"))
    err = build_error(directory)
    assert err.file == str(path)
    # safe_load knows no python/* tag: the loader refuses the file, nothing is constructed
    assert err.reason.startswith("not valid YAML: could not determine a constructor for the tag")
    assert not marker.exists()


def test_rule_files_and_manifests_are_read_with_a_safe_yaml_loader() -> None:
    # the loader the rule loader and the manifest parser share constructs plain data only
    assert issubclass(safe_yaml.BASE_LOADER, yaml.constructor.SafeConstructor)
    assert yaml.load("a: !!python/tuple [1]", Loader=yaml.UnsafeLoader) == {"a": (1,)}  # what an unsafe one does
    with pytest.raises(InvalidInput, match="not valid YAML"):
        safe_yaml.load_all("a: !!python/tuple [1]")


def test_python_yaml_tags_in_catalog_manifests_are_refused(marker: Path) -> None:
    text = f'apiVersion: ome.io/v1beta1\nkind: !!python/object/apply:os.system ["touch {marker}"]\n'
    with pytest.raises(InvalidInput) as err:
        load_documents(text, "evil.yaml")
    assert err.value.field == "evil.yaml" and err.value.message.startswith("not valid YAML")
    assert not marker.exists()


@pytest.mark.parametrize(
    "when",
    [
        "{runtime_name: {regex: '.*'}}",
        "{runtime_name: {eval: \"__import__('os')\"}}",
        "{runtime_name: {$m: model_name}}",
        "{runtime_name: {__call__: x}}",
    ],
)
def test_a_condition_operator_that_is_not_in_the_list_is_refused(tmp_path: Path, marker: Path, when: str) -> None:
    directory = copy_rules(tmp_path)
    line = append_rule(directory / "10-runtime.yaml", rule_text(when=when))
    err = load_error(directory)
    assert (err.rule_id, err.line) == ("extra-rule", line)
    assert err.reason.startswith("schema")
    assert not marker.exists()


@pytest.mark.parametrize("ref", ["__class__", "os.system", "\"__import__('os')\"", "runtime_name.__class__"])
def test_a_fact_reference_to_a_non_field_is_refused_by_the_loader(tmp_path: Path, ref: str) -> None:
    directory = copy_rules(tmp_path)
    line = append_rule(directory / "10-runtime.yaml", rule_text(when=f"{{runtime_name: {{ne: {{fact: {ref}}}}}}}"))
    err = load_error(directory)
    assert (err.rule_id, err.line) == ("extra-rule", line)
    assert "a value must be a literal or {fact: <known field>}" in err.reason


@pytest.mark.parametrize("field", ["__import__", "$or", "os.system", "runtime_name.__class__"])
def test_a_condition_on_something_that_is_not_a_fact_field_is_refused(tmp_path: Path, field: str) -> None:
    directory = copy_rules(tmp_path)
    append_rule(directory / "10-runtime.yaml", rule_text(when=json.dumps({field: "x"})))
    err = load_error(directory)
    assert err.rule_id == "extra-rule"
    assert f"unknown fact field {field!r}" in err.reason


def collect_keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        keys = set(node)
        for value in node.values():
            keys |= collect_keys(value)
        return keys
    if isinstance(node, list):
        return set().union(*(collect_keys(v) for v in node)) if node else set()
    return set()


def test_compiled_conditions_are_durable_rules_json_over_fact_fields_only() -> None:
    for rule in default_revision().policy.rules:
        assert json.loads(json.dumps(rule.condition)) == rule.condition
        assert collect_keys(rule.condition) <= set(FIELDS) | DURABLE_OPERATORS, rule.id
