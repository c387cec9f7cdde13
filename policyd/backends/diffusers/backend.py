"""vLLM-Omni's diffusers backend as the core sees it (policyd/backends/interface.py): an engine
running ``vllm serve … --omni --diffusion-load-format diffusers``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from policyd.backends.diffusers import encoding, facts
from policyd.backends.diffusers.effective import DiffusersEffective, backend_effective
from policyd.backends.diffusers.fields import FIELDS
from policyd.backends.interface import Judged
from policyd.contract import policy_pb2 as pb
from policyd.records import Field, Record
from policyd.resources.objects import BaseModel, InferenceService, ServingRuntime


class VllmOmniDiffusers:
    name = "vLLM-Omni's diffusers backend"
    prefix = "diffusers"
    fields: Mapping[str, Field] = FIELDS
    section = "diffusers"

    def model_facts(self, model: BaseModel) -> Record:
        return facts.model_facts(model)

    def engine_facts(self, runtime: ServingRuntime, isvc: InferenceService | None) -> Record:
        return facts.engine_facts(runtime, isvc)

    def runs(self, engine_facts: Record) -> bool:
        return bool(engine_facts["diffusers_backend"])

    def effective(
        self, runtime: ServingRuntime, isvc: InferenceService | None, model: BaseModel | None, refusal: Judged | None
    ) -> DiffusersEffective:
        config = facts.config_for(runtime, isvc)
        if config is None:
            raise ValueError(f"{self.name}: the engine of runtime {runtime.meta.name} does not run it")
        return backend_effective(config, model, refusal)

    def encode(
        self, effect: DiffusersEffective, refusal: pb.Reason | None, advisories: Sequence[pb.Reason]
    ) -> pb.DiffusersBackend:
        return encoding.message(effect, refusal, advisories)


DIFFUSERS = VllmOmniDiffusers()
