"""The rule effects are defined once (policyd/policy/effects.py): the schema, the loader's
checks and the docs read them from there."""

from __future__ import annotations

from testkit.shared import REPO

from policyd.policy.effects import DECIDING, EFFECTS, GROUPED, OUTCOMES, scope_effects
from policyd.policy.loader import schema
from policyd.records import SCOPES


def test_the_rule_file_schema_takes_its_effects_from_the_registry() -> None:
    loaded = schema()
    defs = loaded["$defs"]
    assert defs["rule"]["properties"]["effect"]["enum"] == list(EFFECTS)
    assert defs["group"]["properties"]["effect"]["enum"] == list(GROUPED)
    assert defs["test"]["properties"]["expect"]["properties"]["effect"]["enum"] == list(OUTCOMES)
    listed = loaded["properties"]["selection"]["properties"]["listed_as_excluded"]["items"]["enum"]
    assert set(listed) == DECIDING


def test_every_scope_takes_some_effect_and_every_effect_some_scope() -> None:
    assert all(scope_effects(scope) for scope in SCOPES)
    assert all(set(e.scopes) <= set(SCOPES) for e in EFFECTS.values())


def test_every_effect_is_documented_in_the_rules_page() -> None:
    page = (REPO / "docs" / "rules.md").read_text()
    assert [name for name in EFFECTS if f"`{name}`" not in page] == []
