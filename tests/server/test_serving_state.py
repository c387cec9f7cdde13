"""The serving state: the catalog directory, the webhook's refusals, and rule swaps."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from testkit.shared import RULES

from policyd.contract import policy_pb2 as pb
from policyd.decision.decider import Decider
from policyd.server.state import ENTRY_OVERHEAD, DecisionCache, ServingState
from policyd.server.wire import encode

RUNTIME = """
apiVersion: ome.io/v1beta1
kind: ClusterServingRuntime
metadata:
  name: {name}
spec:
  supportedModelFormats:
    - modelFormat: {{name: safetensors, version: "1.0.0"}}
      modelFramework: {{name: transformers, version: "4.45.0"}}
      modelArchitecture: LlamaForCausalLM
{extra}
"""


def test_a_runtime_with_autoscaler_policy_ref_is_refused_and_the_rest_load(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text(RUNTIME.format(name="ok", extra=""))
    (tmp_path / "scaled.yaml").write_text(RUNTIME.format(name="scaled", extra="  autoscalerPolicyRef: {name: hpa}"))
    engine = "  engineConfig: {autoscalerPolicyRef: {name: hpa}}"
    (tmp_path / "engine.yaml").write_text(RUNTIME.format(name="engine", extra=engine))
    (tmp_path / "bad.yaml").write_text(RUNTIME.format(name="bad", extra="").replace('"1.0.0"', "1.0"))
    # a version OME cannot read is taken, as OME takes it (it matches no version)
    (tmp_path / "misread.yaml").write_text(RUNTIME.format(name="misread", extra="").replace('"4.45.0"', '"4.x"'))
    state = ServingState(RULES, tmp_path, lambda attempt: None)
    assert sorted(k[2] for k in state.catalog.runtimes) == ["misread", "ok"]
    assert any("scaled" in e and "spec.autoscalerPolicyRef" in e for e in state.catalog_errors)
    assert any("engine" in e and "spec.engineConfig.autoscalerPolicyRef" in e for e in state.catalog_errors)
    assert any(
        e.startswith(str(tmp_path / "bad.yaml")) and "spec.supportedModelFormats[0].modelFormat.version" in e
        for e in state.catalog_errors
    )


def test_a_refused_rules_change_keeps_the_last_good_revision(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(RULES, rules, ignore=shutil.ignore_patterns("examples"))
    attempts = []
    state = ServingState(rules, None, attempts.append)
    good = state.revision
    (rules / "10-runtime.yaml").write_text(
        (rules / "10-runtime.yaml").read_text().replace("runtime_disabled: true}", "runtime_gone: true}")
    )
    attempt = state.reload_rules()
    assert not attempt.ok and attempt.rule_id == "runtime-disabled" and attempt.file.endswith("10-runtime.yaml")
    assert "runtime_gone" in attempt.error
    assert state.revision is good and attempts == [attempt]


def test_a_call_deciding_with_reloaded_rules_gets_them_as_the_last_attempt_after_a_refused_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GetStatus's revisions and last attempt agree for any call that begins once the new rules
    decide — also while the old rules are being closed, which can take a while on a loaded machine."""
    rules = tmp_path / "rules"
    shutil.copytree(RULES, rules, ignore=shutil.ignore_patterns("examples"))
    seen: list[tuple[str, str, bool]] = []
    close = Decider.close

    def a_call_arrives_while_closing(decider: Decider) -> None:
        with state.hold_decider() as serving:
            seen.append((serving.revision.id, state.last_attempt.revision, state.last_attempt.ok))
        close(decider)

    monkeypatch.setattr(Decider, "close", a_call_arrives_while_closing)  # observed, then done as ever
    state = ServingState(rules, None, lambda attempt: None)
    original = (rules / "10-runtime.yaml").read_text()
    (rules / "10-runtime.yaml").write_text(original.replace("runtime_disabled: true}", "runtime_gone: true}"))
    assert not state.reload_rules().ok
    (rules / "10-runtime.yaml").write_text(original)
    selection = rules / "90-selection.yaml"
    selection.write_text(
        selection.read_text().replace(
            "[ServingRuntime, ClusterServingRuntime]", "[ClusterServingRuntime, ServingRuntime]"
        )
    )
    reloaded = state.reload_rules()
    assert reloaded.ok
    assert seen == [(reloaded.revision, reloaded.revision, True)]


def test_the_decision_cache_keeps_the_most_recent_answers_within_its_byte_budget() -> None:
    answers = [
        encode(pb.SelectResponse(error="x" * 100, revisions=pb.Revisions(rules_revision=str(i)))) for i in range(5)
    ]
    size = len(answers[0].data) + ENTRY_OVERHEAD  # an entry counts its encoded answer and its own keeping
    cache = DecisionCache(budget_bytes=3 * size)
    for i, answer in enumerate(answers[:3]):
        cache.put(("r", "c", "Select", bytes([i])), answer)
    assert cache.get(("r", "c", "Select", bytes([0]))) == (answers[0], ())  # now the most recently used
    cache.put(("r", "c", "Select", bytes([3])), answers[3])
    assert cache.get(("r", "c", "Select", bytes([1]))) is None  # the least recently used went
    assert cache.get(("r", "c", "Select", bytes([0]))) == (answers[0], ())
    huge = encode(pb.SelectResponse(error="x" * (4 * size)))
    cache.put(("r", "c", "Select", b"huge"), huge)
    assert cache.get(("r", "c", "Select", b"huge")) is None  # larger than the whole budget: not cached
    assert cache.get(("r", "c", "Select", bytes([3]))) == (answers[3], ())
