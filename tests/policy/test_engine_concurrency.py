"""The engine serves concurrent calls: verdicts from threads racing on one revision
equal the verdicts of the same records judged one by one."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

from testkit.shared import RULES

from policyd.facts.fields import neutral_record
from policyd.policy.engine import RuleEngine
from policyd.policy.loader import load_policy


def _records(seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    out = []
    for _ in range(60):
        record = neutral_record("entry")
        record.update(
            runtime_disabled=rng.random() < 0.2,
            engine_mode_runtime=rng.choice(["", "MultiNode", "RawDeployment"]),
            engine_mode_requested=rng.choice(["", "OMENative", "MultiNode"]),
            format_name_match=rng.random() < 0.7,
            framework_version_match=rng.random() < 0.7,
            model_quantization=rng.choice(["", "fp8"]),
            entry_quantization=rng.choice(["", "fp8", "awq"]),
            entry_auto_select=rng.random() < 0.6,
            entry_architecture=rng.choice(["", "LlamaForCausalLM"]),
            pipeline_mismatch=rng.choice(["", "", "class", "library"]),
        )
        out.append(record)
    return out


def _ids(engine: RuleEngine, records: list[dict[str, object]]) -> list[tuple[str, ...]]:
    return [tuple(r.id for r in hits) for hits in engine.fire("entry", records)]


def test_concurrent_evaluations_agree_with_serial_ones() -> None:
    policy = load_policy(RULES)
    batches = [_records(seed) for seed in range(16)]
    serial = [_ids(RuleEngine(policy.rules), batch) for batch in batches]
    shared = RuleEngine(policy.rules)
    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(lambda batch: _ids(shared, batch), batches))
    assert concurrent == serial
    assert any(len(hits) > 1 for batch in serial for hits in batch)  # the records do exercise the rules
