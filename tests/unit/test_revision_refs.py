"""A reload frees the old revision's engine, once the calls still judging with it are done."""

from __future__ import annotations

import durable_rules_engine
import pytest
from testkit.shared import RULES

from policyd.policy.revision import build_revision
from policyd.server.revision_refs import RefCounts


def test_a_closed_engine_has_given_its_rulesets_back_to_durable_rules() -> None:
    engine = build_revision(RULES).engine
    handles = [r._handle for r in engine._host._ruleset_directory.values()]
    assert handles
    durable_rules_engine.assert_facts(handles[0], "[]")  # a live ruleset takes facts
    engine.close()
    for handle in handles:  # durable-rules no longer knows them
        with pytest.raises(durable_rules_engine.error, match="error code"):
            durable_rules_engine.assert_facts(handle, "[]")
    engine.close()  # twice is once


def test_a_retired_value_closes_when_its_last_holder_is_done_and_at_once_without_one() -> None:
    closed: list[str] = []
    current = ["first"]
    refs: RefCounts[str] = RefCounts(closed.append)
    with refs.hold(lambda: current[0]) as held:
        assert held == "first"
        refs.retire("first", lambda: current.__setitem__(0, "second"))
        assert closed == []  # a call is still judging with it
        with refs.hold(lambda: current[0]) as newer:
            assert newer == "second"  # new calls get the new one
    assert closed == ["first"]
    refs.retire("second", lambda: current.__setitem__(0, "third"))
    assert closed == ["first", "second"]
