"""The diffusers backend over the contract: Effective's backends.diffusers message, Explain's
reason and advisories, and Resolve's rejection of a named runtime that cannot start."""

from __future__ import annotations

from testkit import diffusers_backend as kit

from policyd.contract import policy_pb2 as pb

from .support import Harness, isvc_text, manifest_catalog

FP8 = ("--quantization-config", '{"method": "fp8"}', "--diffusers-call-kwargs", '{"output_type": "np"}')


def test_effective_shows_what_takes_effect_in_a_diffusers_backend_engine(harness: Harness) -> None:
    request = pb.EffectiveRequest(
        inference_service=isvc_text(kit.isvc()),
        catalog=manifest_catalog(kit.model(), kit.runtime("rt", "--dtype", "float16", *FP8), isolated=True),
    )
    backend = harness.ok("Effective", request).backends.diffusers
    assert backend.pipeline_class == "QwenImagePipeline"
    first = backend.from_pretrained[0]
    assert (first.key, first.value, first.source) == (
        "torch_dtype",
        "torch.float16",
        "--dtype",
    )
    assert backend.quantization.path == "translated"
    assert list(backend.quantization.components) == ["transformer"]
    assert [(c.key, c.shadowed) for c in backend.call_kwargs] == [("output_type", "always")]
    assert backend.attention.attempts[0] == "_flash_3_hub" and backend.attention.fallback == "native"
    assert not backend.HasField("refusal")
    assert any(a.rule_id == "diffusers-call-kwargs-overridden" for a in backend.advisories)


def test_effective_has_no_diffusers_section_for_other_engines(harness: Harness) -> None:
    request = pb.EffectiveRequest(
        inference_service=isvc_text(kit.isvc()),
        catalog=manifest_catalog(kit.model(), kit.runtime("rt", diffusers=False), isolated=True),
    )
    assert not harness.ok("Effective", request).backends.HasField("diffusers")


def test_effective_of_a_named_runtime_that_cannot_start_shows_the_refusal(harness: Harness) -> None:
    request = pb.EffectiveRequest(
        inference_service=isvc_text(kit.isvc(runtime="rt")),
        catalog=manifest_catalog(kit.model(), kit.runtime("rt", "--step-execution"), isolated=True),
    )
    refusal = harness.ok("Effective", request).backends.diffusers.refusal
    assert refusal.rule_id == "diffusers-step-wise-execution-not-supported"
    assert "Step-wise execution is not yet supported with the diffusers backend." in refusal.message


def test_explain_gives_the_backends_message_and_its_advisories(harness: Harness) -> None:
    catalog = manifest_catalog(
        kit.model(), kit.runtime("broken", "--usp", "2"), kit.runtime("works", "--flow-shift", "3"), isolated=True
    )
    reply = harness.ok("Explain", pb.ExplainRequest(inference_service=isvc_text(kit.isvc()), catalog=catalog))
    verdicts = {v.name: v for v in reply.runtimes}
    broken = verdicts["broken"]
    assert (broken.compatible, broken.selectable) == (False, False)
    assert (broken.reason.rule_id, broken.reason.component, broken.reason.runtime_value) == (
        "diffusers-sequence-parallel-not-supported",
        "--ulysses-degree",
        "2",
    )
    works = verdicts["works"]
    assert works.selectable
    assert "diffusers-flow-shift-ignored" in [a.rule_id for a in works.advisories]


def test_resolve_rejects_a_named_runtime_that_cannot_start(harness: Harness) -> None:
    request = pb.ResolveRequest(
        inference_service=isvc_text(kit.isvc(runtime="rt")),
        catalog=manifest_catalog(kit.model(), kit.runtime("rt", "--enforce-eager"), isolated=True),
    )
    reply = harness.ok("Resolve", request)
    assert reply.runtime == "" and not reply.compatible
    assert reply.rejection.field == "spec.runtime.name"
    assert "Eager execution is not supported with the diffusers backend." in reply.rejection.message
