"""Engine backends are plug-ins (policyd/backends/): the fact catalogue carries every registered
backend's fields and the core declares none of them, and a second backend is a package of its
own (here, a class in this file) plus a rule file: installed as the registry's one line would
install it, its facts reach the records, its rule file judges them, and what it makes take
effect reaches the answer — no core module changed."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from testkit import diffusers_backend as diffusers

from policyd.backends import BACKENDS
from policyd.backends.interface import Backend, Judged
from policyd.contract import policy_pb2 as pb
from policyd.decision.decider import Decider
from policyd.facts.fields import CORE_FIELDS, FIELDS, catalogue
from policyd.policy.revision import build_revision
from policyd.records import BOOL, ENTRY, FROM_CATALOG, FROM_RUNTIME, INT, LIST, RUNTIME, STR, Field, Record
from policyd.resources.objects import BaseModel, InferenceService, ServingRuntime
from policyd.server import responses

from .builders import REPO, catalog, copy_rules, isvc, model, parsed_isvc, runtime

POLICYD = REPO / "policyd"

TOY_RULES = """\
description: The toy backend refuses to start with --turbo.
rules:
  - id: toy-turbo-not-supported
    order: 365
    applies_to: runtime
    effect: exclude
    kind: StartupRefusal
    when: {toy_engine: true, toy_flags: {contains: --turbo}}
    reason: "the toy backend refuses to start: --turbo is not supported"
    tests:
      - facts: {toy_engine: true, toy_flags: ["--turbo"]}
        expect: {rule: toy-turbo-not-supported, effect: exclude}
      - facts: {toy_engine: false, toy_flags: ["--turbo"]}
        expect: {effect: pass}
  # a diffusion engine of its own: it reads the pipeline facts every diffusion backend shares
  - id: toy-pipeline-not-supported
    order: 367
    applies_to: runtime
    effect: exclude
    kind: StartupRefusal
    when: {toy_engine: true, model_pipeline_known: true, model_pipeline_class: {ne: ToyPipeline}}
    reason: "the toy backend serves ToyPipeline only, not {model_pipeline_class}"
    runtime_value: "{model_pipeline_class}"
    tests:
      - facts: {toy_engine: true, model_pipeline_known: true, model_pipeline_class: QwenImagePipeline}
        expect: {rule: toy-pipeline-not-supported, effect: exclude}
      - facts: {toy_engine: true, model_pipeline_known: true, model_pipeline_class: ToyPipeline}
        expect: {effect: pass}
"""


class ToyBackend:
    """An engine running ``toy-serve``: its flags are its facts, and take effect as they are."""

    name = "the toy backend"
    prefix = "toy"
    fields: Mapping[str, Field] = {
        "toy_engine": Field(BOOL, RUNTIME, "the engine runs toy-serve", relational=True, source=FROM_RUNTIME),
        "toy_flags": Field(LIST, RUNTIME, "toy-serve's arguments", relational=True, source=FROM_RUNTIME),
    }
    section = "diffusers"  # the contract has no toy section: it borrows the diffusers one

    @staticmethod
    def _args(runtime: ServingRuntime) -> list[str] | None:
        command = runtime.raw["spec"]["engineConfig"]["runner"].get("command", [])
        return command[1:] if command[:1] == ["toy-serve"] else None

    def model_facts(self, model: BaseModel) -> Record:
        return {}

    def engine_facts(self, runtime: ServingRuntime, isvc: InferenceService | None) -> Record:
        args = self._args(runtime)
        return {"toy_engine": args is not None, "toy_flags": args or []}

    def runs(self, engine_facts: Record) -> bool:
        return bool(engine_facts["toy_engine"])

    def effective(
        self, runtime: ServingRuntime, isvc: InferenceService | None, model: BaseModel | None, refusal: Judged | None
    ) -> str:
        return "toy-serve " + " ".join(self._args(runtime) or ())

    def encode(self, effect: str, refusal: pb.Reason | None, advisories: Sequence[pb.Reason]) -> pb.DiffusersBackend:
        return pb.DiffusersBackend(pipeline_class=effect, refusal=refusal)


TOY: Backend[str] = ToyBackend()


def test_the_catalogue_carries_every_registered_backends_fields() -> None:
    assert catalogue(BACKENDS) == FIELDS
    for backend in BACKENDS:
        assert backend.fields, backend.name
        assert {name: FIELDS[name] for name in backend.fields} == dict(backend.fields), backend.name


def test_the_core_declares_no_backend_field() -> None:
    backend_fields = {name for backend in BACKENDS for name in backend.fields}
    assert backend_fields & set(CORE_FIELDS) == set()
    assert set(FIELDS) == set(CORE_FIELDS) | backend_fields


def test_no_core_module_names_a_backends_field() -> None:
    # a backend's facts are its package's and its rule file's: the core reads them through the registry
    names = re.compile(r"\b(" + "|".join(name for backend in BACKENDS for name in backend.fields) + r")\b")
    # the clients (policyctl prints a backend's answer section) are not the core
    outside = {"backends", "contract", "clients"}
    core = [p for p in POLICYD.rglob("*.py") if not outside & set(p.relative_to(POLICYD).parts)]
    named = {str(p.relative_to(POLICYD)): names.findall(p.read_text()) for p in core}
    assert core
    assert {path: found for path, found in named.items() if found} == {}


def test_a_second_backend_adds_its_fields_to_the_catalogue() -> None:
    assert catalogue((*BACKENDS, TOY)) == {**FIELDS, **TOY.fields}


def test_a_backend_declares_no_field_declared_already_of_another_scope_or_read_from_the_catalog() -> None:
    class Clashing(ToyBackend):
        fields: Mapping[str, Field] = {"runtime_name": Field(STR, RUNTIME, "again", source=FROM_RUNTIME)}

    class Entries(ToyBackend):
        fields: Mapping[str, Field] = {"toy_entry": Field(STR, ENTRY, "one entry's", source=FROM_RUNTIME)}

    with pytest.raises(ValueError, match="the toy backend: fact field 'runtime_name' is declared already"):
        catalogue((*BACKENDS, Clashing()))

    class Unprefixed(ToyBackend):
        fields: Mapping[str, Field] = {"turbo": Field(BOOL, RUNTIME, "--turbo", relational=True, source=FROM_RUNTIME)}

    with pytest.raises(ValueError, match="fact field 'turbo' does not begin with the backend's prefix toy_"):
        catalogue((*BACKENDS, Unprefixed()))
    with pytest.raises(ValueError, match="fact field 'toy_entry' has scope 'entry'; a backend's fields are model or"):
        catalogue((*BACKENDS, Entries()))

    class Reading(ToyBackend):
        # a backend's facts are derived from the runtime and the request (Backend.engine_facts)
        fields: Mapping[str, Field] = {"toy_memory": Field(INT, RUNTIME, "GPU memory", source=FROM_CATALOG)}

    with pytest.raises(ValueError, match="fact field 'toy_memory' has source 'catalog'; a backend's facts read the"):
        catalogue((*BACKENDS, Reading()))


def toy_revision(rules: Path) -> Decider:
    """A decider of ``rules`` (with the toy's rule file) for the registry's backends and the toy,
    as the registry's line would install it: the revision's fact catalogue, its facts and its
    answers' sections all take the backends from there, and nothing global changes."""
    (rules / "35-toy-backend.yaml").write_text(TOY_RULES)
    return Decider(build_revision(rules, backends=(*BACKENDS, TOY)))


def toy_runtime(name: str, *args: str) -> dict[str, Any]:
    manifest = runtime(name)
    manifest["spec"]["engineConfig"]["runner"]["command"] = ["toy-serve", *args]
    return manifest


def test_a_second_backend_is_a_package_and_a_rule_file(tmp_path: Path) -> None:
    decider = toy_revision(copy_rules(tmp_path))
    objects = catalog(model(), toy_runtime("toy-turbo", "--turbo"), toy_runtime("toy-plain"))
    assert [v.runtime.meta.name for v in decider.select(objects, parsed_isvc(isvc())).ranking] == ["toy-plain"]
    selection, judged = decider.explain_all(objects, parsed_isvc(isvc()))
    assert [v.runtime.meta.name for v in selection.ranking] == ["toy-plain"]
    refused = next(v for v in judged if v.runtime.meta.name == "toy-turbo")
    assert refused.reason is not None and refused.reason.rule_id == "toy-turbo-not-supported"

    named = decider.effective(objects, parsed_isvc(isvc(runtime_name="toy-turbo")))
    (effect,) = named.backends
    assert effect.backend is TOY and effect.effect == "toy-serve --turbo"
    assert effect.refusal is not None and effect.refusal.rule_id == "toy-turbo-not-supported"
    answer = pb.EffectiveResponse()
    responses.put_backends(answer, named.backends)
    assert answer.backends.diffusers.pipeline_class == "toy-serve --turbo"
    assert answer.backends.diffusers.refusal.rule_id == "toy-turbo-not-supported"


def test_a_second_diffusion_backend_refuses_from_its_own_rule_file_on_the_pipeline_facts_every_backend_shares(
    tmp_path: Path,
) -> None:
    decider = toy_revision(copy_rules(tmp_path))
    toy = toy_runtime("toy-diffusion")
    toy["spec"]["supportedModelFormats"] = [diffusers.entry()]
    objects = catalog(diffusers.model(), toy, diffusers.runtime("omni"))
    request = parsed_isvc(diffusers.isvc())
    selection, judged = decider.explain_all(objects, request)
    assert [v.runtime.meta.name for v in selection.ranking] == ["omni"]  # the diffusers backend's own, unrefused
    refused = next(v for v in judged if v.runtime.meta.name == "toy-diffusion")
    assert refused.reason is not None and refused.reason.rule_id == "toy-pipeline-not-supported"
    assert refused.reason.message == "the toy backend serves ToyPipeline only, not QwenImagePipeline"
