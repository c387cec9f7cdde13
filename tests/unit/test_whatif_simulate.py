"""Simulate: every InferenceService decided by a Decider before and after a proposed
change, and why its decision changed, read from the verdicts (the old choice's first reason
after, the ranking key that now puts another first, a named runtime's support)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from policyd.catalog.snapshot import Catalog, key_of
from policyd.decision.decider import Decider
from policyd.errors import InvalidInput
from policyd.policy.revision import Revision, build_revision
from policyd.resources.manifests import parse_object
from policyd.whatif.simulate import Cause, Decision, decide, propose, simulate

from .builders import (
    NAMESPACE,
    RULES,
    catalog,
    default_revision,
    entry,
    isvc,
    model,
    parsed,
    parsed_isvc,
    plain,
    runtime,
)

CSR = ("ClusterServingRuntime", "", "srt-llama")
SR = ("ServingRuntime", NAMESPACE, "sr-llama")


def _what_if(
    base: Catalog,
    apply: list[dict[str, Any]] = (),  # type: ignore[assignment]
    delete: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    after_rules: Revision | None = None,
) -> list[tuple[str, Decision, Decision, tuple[Cause, ...]]]:
    revision = default_revision()
    proposal = propose(base, [parsed(d) for d in apply], list(delete))
    result = simulate((base, plain(revision)), (proposal.catalog, plain(after_rules or revision)))
    return [(c.isvc[2], c.before, c.after, c.causes) for c in result.changes]


def _world(*extra: dict[str, Any]) -> Catalog:
    return catalog(model(), runtime("srt-llama"), isvc("svc"), *extra)


def test_nothing_changes_when_the_proposal_changes_nothing_a_decision_reads() -> None:
    assert _what_if(_world(), apply=[runtime("srt-llama")]) == []
    assert _what_if(_world(), apply=[runtime("srt-other", entries=[entry(architecture="MistralForCausalLM")])]) == []


def test_deleting_the_selected_runtime_leaves_the_model_without_one() -> None:
    ((name, before, after, causes),) = _what_if(_world(), delete=[CSR])
    assert name == "svc"
    assert (before.outcome, before.runtime_key) == ("selected", CSR)
    assert (after.outcome, after.refusal and after.refusal.kind) == ("refused", "RuntimeNotFound")
    assert causes[0] == Cause("removed", runtime=CSR)


def test_a_servingruntime_in_the_namespace_ranks_first_by_kind() -> None:
    sr = runtime("sr-llama", kind="ServingRuntime")
    ((_, before, after, causes),) = _what_if(_world(), apply=[sr])
    assert (before.runtime_key, after.runtime_key) == (CSR, SR)
    assert Cause("added", runtime=SR) in causes
    (outranked,) = [c for c in causes if c.cause == "outranked"]
    assert (outranked.runtime, outranked.by, outranked.rank_key) == (CSR, SR, "kind")
    assert (outranked.value, outranked.by_value) == ("ClusterServingRuntime", "ServingRuntime")


def test_a_higher_score_outranks_with_both_scores_from_the_verdicts() -> None:
    better = runtime("srt-better", entries=[entry(priority=3)])
    ((_, _, after, causes),) = _what_if(_world(), apply=[better])
    assert after.runtime is not None and after.runtime.meta.name == "srt-better"
    (outranked,) = [c for c in causes if c.cause == "outranked"]
    assert (outranked.rank_key, outranked.value, outranked.by_value) == ("score", "2", "6")


def test_the_old_choice_that_now_fails_a_check_gives_its_new_first_reason() -> None:
    world = _world(runtime("srt-second", entries=[entry(framework=("transformers", "4.45.0.dev0"))]))
    ((_, before, after, causes),) = _what_if(world, apply=[runtime("srt-llama", disabled=True)])
    assert before.runtime_key == CSR and after.runtime is not None and after.runtime.meta.name == "srt-second"
    (unselectable,) = [c for c in causes if c.cause == "unselectable"]
    assert unselectable.runtime == CSR
    assert unselectable.reason is not None and unselectable.reason.rule_id == "runtime-disabled"


def test_the_new_choice_that_failed_a_check_before_gives_that_reason() -> None:
    world = catalog(model(), runtime("srt-llama", disabled=True), isvc("svc"))
    ((_, before, after, causes),) = _what_if(world, apply=[runtime("srt-llama")])
    assert (before.outcome, after.outcome) == ("refused", "selected")
    (selectable,) = [c for c in causes if c.cause == "selectable"]
    assert selectable.reason is not None and selectable.reason.rule_id == "runtime-disabled"


def test_a_named_runtime_that_stops_declaring_support_shows_its_advisory_appearing() -> None:
    world = catalog(model(), runtime("srt-llama"), isvc("named", runtime_name="srt-llama"))
    moved = runtime("srt-llama", entries=[entry(framework=("transformers", "4.47.0"))])
    ((_, before, after, causes),) = _what_if(world, apply=[moved])
    assert (before.outcome, before.advisory) == ("resolved", "")
    assert after.outcome == "resolved" and after.advisory.startswith("Runtime srt-llama does not declare support")
    (support,) = causes
    assert support.cause == "support" and support.reason is not None and support.reason.rule_id == "supported-formats"
    assert support.reason.parts[0].rule_id == "framework-version-mismatch"
    # and the way back: the advisory goes away, the reason is the one it had
    back = catalog(model(), moved, isvc("named", runtime_name="srt-llama"))
    ((_, before, after, causes),) = _what_if(back, apply=[runtime("srt-llama")])
    assert before.advisory and not after.advisory
    assert causes[0].cause == "support" and causes[0].reason is not None


def test_another_rules_directory_decides_after(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "pinned.yaml").write_text((RULES / "examples" / "pinned-images.yaml").read_text())
    world = catalog(model(), runtime("srt-llama", image="docker.io/lmsysorg/sglang:latest"), isvc("svc"))
    ((_, before, after, causes),) = _what_if(world, after_rules=build_revision(extra, RULES))
    assert (before.outcome, after.outcome) == ("selected", "refused")
    (unselectable,) = [c for c in causes if c.cause == "unselectable"]
    assert unselectable.reason is not None and unselectable.reason.message.startswith("runtime image is not pinned")


def test_an_inference_service_only_one_side_holds_is_absent_on_the_other() -> None:
    ((name, before, after, causes),) = _what_if(_world(), apply=[isvc("new")])
    assert (name, before.outcome, after.outcome, causes) == ("new", "absent", "selected", ())


def test_deleting_an_object_the_catalog_does_not_hold_names_the_key() -> None:
    with pytest.raises(InvalidInput) as err:
        propose(_world(), [], [CSR, ("ClusterServingRuntime", "", "nope")])
    assert err.value.field == "delete[1]"
    assert err.value.message == "ClusterServingRuntime nope is not in the catalog"


def test_the_proposal_says_what_it_does_to_each_object_and_changes_nothing_in_place() -> None:
    world = _world()
    proposal = propose(world, [parsed(runtime("srt-llama")), parsed(runtime("srt-new"))], [key_of(parsed(isvc("svc")))])
    assert [a for _, a in proposal.actions] == ["deleted", "unchanged", "created"]
    assert world.inference_services and not proposal.catalog.inference_services


def test_a_cached_side_is_decided_again_in_full_when_it_changes() -> None:
    calls: list[str] = []

    def slim(c: Catalog, i: Any, r: Decider) -> Decision:
        calls.append(i.meta.name)
        return decide(c, i, r).slim()

    world = _world(runtime("srt-second", entries=[entry(priority=1)]))
    after = propose(world, [parsed(runtime("srt-llama", disabled=True))], []).catalog
    result = simulate((world, plain(default_revision())), (after, plain(default_revision())), decide_before=slim)
    (change,) = result.changes
    assert calls == ["svc"] and change.causes[0].cause == "unselectable"
    assert change.before.judged == {} and change.after.judged == {}  # changes keep slim decisions


def test_inference_services_given_apart_are_decided_on_both_sides() -> None:
    world = catalog(model(), runtime("srt-llama"))
    given = parsed_isvc(isvc("given"))
    proposal = propose(world, [], [CSR])
    result = simulate((world, plain(default_revision())), (proposal.catalog, plain(default_revision())), [given])
    assert [(c.isvc[2], c.before.outcome, c.after.outcome) for c in result.changes] == [
        ("given", "selected", "refused")
    ]
    assert result.decided == 1
    assert isinstance(parse_object(isvc("given")), type(given))


def _world_of_many() -> Catalog:
    docs = [
        model(),
        model("small", size="1B"),
        model("mistral", architecture="MistralForCausalLM"),
        model("ns-model", kind="BaseModel"),
        runtime("srt-llama"),
        runtime("srt-small", size_range=("500M", "2B")),
        runtime("srt-mistral", entries=[entry(architecture="MistralForCausalLM")]),
        runtime("sr-llama", kind="ServingRuntime"),
        runtime("srt-named-only", entries=[entry(auto_select=False)]),
        *(isvc(f"svc-{m}", model_name=m) for m in ("llama-3-2-3b-instruct", "small", "mistral")),
        isvc("svc-ns", model_name="ns-model", model_kind="BaseModel"),
        isvc("svc-other-ns", namespace="elsewhere"),
        isvc("named", runtime_name="srt-named-only"),
    ]
    return catalog(*docs)


PROPOSALS: list[tuple[list[dict[str, Any]], list[tuple[str, str, str]]]] = [
    ([], [("ClusterServingRuntime", "", "srt-small")]),
    ([], [("ServingRuntime", NAMESPACE, "sr-llama")]),
    ([runtime("srt-mistral", disabled=True)], []),
    ([runtime("srt-named-only", entries=[entry(auto_select=False, framework=("transformers", "4.47.0"))])], []),
    ([runtime("srt-new", entries=[entry(priority=5)])], []),
    ([model("small", size="3B")], []),
    ([runtime("sr-other", kind="ServingRuntime", namespace="elsewhere", entries=[entry(priority=2)])], []),
    ([runtime("srt-unrelated", entries=[entry(architecture="GemmaForCausalLM")])], []),
]


@pytest.mark.parametrize(("apply", "delete"), PROPOSALS)
def test_the_inference_services_left_undecided_are_exactly_those_whose_decision_cannot_change(
    apply: list[dict[str, Any]], delete: list[tuple[str, str, str]]
) -> None:
    # Simulate decides only what a change can reach; deciding everything both ways must agree
    world, revision = _world_of_many(), plain(default_revision())
    after = propose(world, [parsed(d) for d in apply], delete).catalog
    result = simulate((world, revision), (after, revision))
    everything = {
        key: (decide(world, i, revision).identity(), decide(after, after.inference_services[key], revision).identity())
        for key, i in world.inference_services.items()
    }
    assert {c.isvc for c in result.changes} == {k for k, (was, will) in everything.items() if was != will}
    assert all((c.before.identity(), c.after.identity()) == everything[c.isvc] for c in result.changes)


GPU_MEMORY_RULE = """
rules:
  - id: forty-gib-of-gpu-memory
    order: 155
    applies_to: runtime
    effect: exclude
    kind: Advisory
    when:
      all:
        - accelerator_memory_min_gib: {gt: 0}
        - accelerator_memory_min_gib: {lt: 40}
    reason: "accelerators of {accelerator_memory_min_gib} GiB, not 40"
"""


def _gpu(memory: str) -> dict[str, Any]:
    doc = {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": "gpu-a"}}
    return {**doc, "spec": {"capabilities": {"memoryGB": memory}}}


def test_an_edited_accelerator_class_changes_the_decisions_its_runtimes_memory_decides(tmp_path: Path) -> None:
    """A rule reads the GPU memory of a runtime's AcceleratorClasses (a fact read from the
    catalog): editing the class, and nothing else, changes the decision."""
    (tmp_path / "gpu.yaml").write_text(GPU_MEMORY_RULE)
    revision = plain(build_revision(tmp_path, RULES))
    world = catalog(model(), runtime("srt-llama", classes=["gpu-a"]), isvc("svc"), _gpu("80Gi"))
    proposal = propose(world, [parsed(_gpu("16Gi"))], [])
    (change,) = simulate((world, revision), (proposal.catalog, revision)).changes
    assert (change.before.outcome, change.after.outcome) == ("selected", "refused")
    assert change.before.runtime_key == CSR


def test_an_edited_accelerator_class_is_decided_again_only_under_rules_that_read_one(tmp_path: Path) -> None:
    """Without a rule reading a fact of the catalog, an AcceleratorClass edit changes no verdict:
    nothing is decided again for it; with one, every InferenceService is."""
    (tmp_path / "gpu.yaml").write_text(GPU_MEMORY_RULE)
    world = catalog(model(), runtime("srt-llama", classes=["gpu-a"]), isvc("svc"), _gpu("80Gi"))
    after = propose(world, [parsed(_gpu("16Gi"))], []).catalog
    calls: list[str] = []

    def counted(c: Catalog, i: Any, r: Decider) -> Decision:
        calls.append(i.meta.name)
        return decide(c, i, r)

    for revision, decided in ((plain(default_revision()), []), (plain(build_revision(tmp_path, RULES)), ["svc"])):
        calls.clear()
        simulate((world, revision), (after, revision), decide_before=counted)
        assert calls == decided, revision.revision.id
