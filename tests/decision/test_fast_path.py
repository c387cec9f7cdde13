"""The fast path (candidates from an index, verdicts shared by runtimes of one shape,
snapshots changed incrementally) answers exactly as the plain path, which judges every runtime
in scope: the OME catalog and synthetic ones (tests/testkit/synthetic.py), every model x every
InferenceService shape, Select and Explain (of an InferenceService and of a model alone), in
the basic and the full view, Effective and Admit (also of InferenceServices naming runtimes,
under two names each, asked twice, and Resolve of those), compared as encoded responses; with
the bundled rules, with rules that test fields no bundled rule tests, and with the example
organisation policies (labels, images, points); and with a rule reading a fact of the catalog
(the GPU memory of a runtime's AcceleratorClasses) before and after that AcceleratorClass is
edited."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf.message import Message
from testkit import synthetic
from testkit.catalog_dir import load_directory
from testkit.llama import MODEL_NAME, llama_entry, model_manifest
from testkit.shared import CATALOG, RULES

from policyd.catalog.snapshot import Catalog, CatalogObject
from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb
from policyd.decision.decider import Decider
from policyd.policy.revision import Revision, build_revision
from policyd.resources.manifests import parse_inference_service, parse_object
from policyd.resources.objects import InferenceService, ServingRuntime
from policyd.server.fieldcheck import FieldCheck
from policyd.server.observability import DecisionLog
from policyd.server.servicer import PolicyServicer
from policyd.server.wire import Encoded

HERE = Path(__file__).parent


def _rules(tmp_path_factory: pytest.TempPathFactory, *extra: Path) -> Revision:
    root = tmp_path_factory.mktemp("rules")
    for path in [*RULES.glob("*.yaml"), *extra]:
        shutil.copy(path, root)
    return build_revision(root)


@pytest.fixture(scope="module")
def revisions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Revision]:
    return {
        "bundled": build_revision(RULES),
        "extra fields": _rules(tmp_path_factory, HERE / "rules" / "extra-fields.yaml"),
        "organisation policies": _rules(tmp_path_factory, *(RULES / "examples").glob("*.yaml")),
    }


def _parsed(docs: list[dict[str, object]]) -> list[CatalogObject]:
    out = []
    for doc in docs:
        obj = parse_object(doc)
        assert not isinstance(obj, InferenceService)
        out.append(obj)
    return out


TEMPLATES = 24  # a synthetic catalog of 24 templates x 16 generations: every variant twice
MODELS = 2  # templates whose models (and their sibling families' models) are decided


def _models() -> list[dict[str, object]]:
    return synthetic.models(limit=MODELS, first=TEMPLATES)


def _catalog(name: str) -> Catalog:
    if name == "OME catalog":
        return Catalog.of([*load_directory(CATALOG).objects, *_parsed(_models())])
    return Catalog.of(_parsed([*synthetic.runtimes(TEMPLATES * 16, first=TEMPLATES), *_models()]))


def _requests() -> Iterator[tuple[str, Message]]:
    for model in _models():
        name = str(model["metadata"]["name"])  # type: ignore[index]
        for shape in synthetic.isvc_shapes(name):
            isvc = rpb.InferenceServiceInput(manifest=json.dumps(shape))
            label = f"{name}/{shape['metadata']['name']}"
            yield f"Select {label}", pb.SelectRequest(inference_service=isvc, view=pb.VERDICT_VIEW_FULL)
            yield f"Explain {label}", pb.ExplainRequest(inference_service=isvc, view=pb.VERDICT_VIEW_FULL)
            yield f"Effective {label}", pb.EffectiveRequest(inference_service=isvc)
            yield f"Admit {label}", pb.AdmitRequest(object=rpb.Object(manifest=isvc.manifest))
        for namespace in ("default", "team-6"):
            subject = pb.ModelSubject(model=rpb.ModelRef(name=name), namespace=namespace)
            yield f"Explain model {name} in {namespace}", pb.ExplainRequest(model=subject, view=pb.VERDICT_VIEW_FULL)


NAMED_SAMPLE = 40  # runtimes named, spread over the catalog


def _named_requests(catalog: Catalog) -> Iterator[tuple[str, Message]]:
    """Admit and Resolve of InferenceServices naming runtimes of ``catalog``, of each model, in namespaces
    the rules tell apart, each under two names and asked twice (a named runtime's verdict is
    kept by the shape of request, not by its name)."""
    keys = sorted(catalog.runtimes)
    for model in _models():
        for kind, _, runtime in keys[:: max(1, len(keys) // NAMED_SAMPLE)]:
            for namespace in ("default", "team-7", "team-8"):
                for name in ("chat", "chat", "assistant", "assistant"):
                    spec = {"model": {"name": model["metadata"]["name"]}, "runtime": {"name": runtime, "kind": kind}}  # type: ignore[index]
                    doc = {"kind": "InferenceService", "metadata": {"name": name, "namespace": namespace}}
                    doc["spec"] = {**spec, "engine": {"minReplicas": 1}}
                    label = f"{name} in {namespace} naming {kind} {runtime}"
                    yield f"Admit {label}", pb.AdmitRequest(object=rpb.Object(manifest=json.dumps(doc)))
                    given = rpb.InferenceServiceInput(manifest=json.dumps(doc))
                    yield f"Resolve {label}", pb.ResolveRequest(inference_service=given)


SERVICER = PolicyServicer(None, DecisionLog(None))  # type: ignore[arg-type]  # its handlers alone


def _answer(request: Message, decider: Decider, catalog: Catalog) -> bytes:
    servicer = SERVICER
    handler = {
        pb.SelectRequest: servicer._select,
        pb.ExplainRequest: servicer._explain,
        pb.EffectiveRequest: servicer._effective,
        pb.AdmitRequest: servicer._admit,
        pb.ResolveRequest: servicer._resolve,
    }[type(request)]
    answer = handler(request, decider, catalog, FieldCheck())  # type: ignore[operator]
    message = answer.message() if isinstance(answer, Encoded) else answer
    return message.SerializeToString(deterministic=True)  # type: ignore[no-any-return]


def _basic(request: Message, full: bytes) -> tuple[Message, bytes]:
    """A full-view request in the basic view, and the full answer as the basic view has it:
    without the reasons a group combined."""
    basic = type(request)()
    basic.CopyFrom(request)
    basic.ClearField("view")
    kind = pb.SelectResponse if isinstance(request, pb.SelectRequest) else pb.ExplainResponse
    answer = kind.FromString(full)
    for verdict in answer.excluded if isinstance(answer, pb.SelectResponse) else answer.runtimes:
        for reason in (*([verdict.reason] if verdict.HasField("reason") else []), *verdict.advisories):
            del reason.parts[:]
    return basic, answer.SerializeToString(deterministic=True)


def _changed(catalog: Catalog) -> Catalog:
    """The catalog after a controller's changes: some runtimes deleted, some re-applied under new specs."""
    runtimes = sorted(catalog.runtimes)
    deleted = runtimes[::7]
    replaced = []
    for key in runtimes[3::11]:
        raw = json.loads(json.dumps(catalog.runtimes[key].raw))
        raw["spec"]["disabled"] = not raw["spec"].get("disabled", False)
        replaced.append(parse_object(raw))
    return catalog.changed([r for r in replaced if isinstance(r, ServingRuntime)], deleted)


@pytest.mark.parametrize(
    ("catalog", "rules"),
    [
        ("OME catalog", "bundled"),
        ("synthetic", "bundled"),
        ("synthetic", "extra fields"),
        ("synthetic", "organisation policies"),
    ],
)
def test_fast_path_answers_every_request_as_the_plain_path(
    catalog: str, rules: str, revisions: dict[str, Revision]
) -> None:
    fast = Decider(revisions[rules])
    first = _catalog(catalog)
    requests = [*_requests(), *_named_requests(first)]
    fast.prepare(first)  # as the daemon does on loading: carried over to the changed snapshot
    for snapshot in (first, _changed(first)):
        differ = []
        for what, request in requests:
            expected = _answer(request, fast.plain(), snapshot)
            if _answer(request, fast, snapshot) != expected:
                differ.append(what)
            if request.DESCRIPTOR.fields_by_name.get("view"):
                basic, answer = _basic(request, expected)
                # asked twice: judged, then from what the first answer kept (verdicts, encodings)
                if {_answer(basic, fast, snapshot) for _ in range(2)} != {answer}:
                    differ.append(f"{what} (basic view)")
        assert differ == [], f"the fast path differs from the plain path for {differ[:5]}"
    assert len(requests) > 300


NO_LLAMA = """
rules:
  - id: no-llama
    order: 105
    applies_to: runtime
    effect: exclude
    kind: Advisory
    when: {runtime_disabled: false, model_architecture: LlamaForCausalLM}
    reason: Llama models are served elsewhere
"""


def test_rules_reloaded_over_one_catalog_choose_from_their_own_candidates(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A reload whose rules test the same fields shares the catalog's index, not its plans:
    the stricter revision's candidates must not stand for the bundled one's."""
    extra = tmp_path_factory.mktemp("extra") / "50-no-llama.yaml"
    extra.write_text(NO_LLAMA)
    strict, bundled = _rules(tmp_path_factory, extra), build_revision(RULES)
    catalog = _catalog("OME catalog")
    deciders = {"strict": Decider(strict), "bundled": Decider(bundled)}
    selects = [(what, r) for what, r in _requests() if isinstance(r, pb.SelectRequest)]
    for rules in ("strict", "bundled", "strict"):
        fast = deciders[rules]
        fast.prepare(catalog)
        differ = [w for w, r in selects if _answer(r, fast, catalog) != _answer(r, fast.plain(), catalog)]
        assert differ == [], f"the fast path differs from the plain path for {differ[:5]}"


def _accelerator_class(memory: str) -> CatalogObject:
    doc = {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": "gpu-a"}}
    return _parsed([{**doc, "spec": {"vendor": "nvidia", "capabilities": {"memoryGB": memory}}}])[0]


def _runtime_on(name: str, classes: list[str]) -> dict[str, object]:
    spec = {"supportedModelFormats": [llama_entry()], "engineConfig": {"runner": {"name": "e", "image": "srt:v1"}}}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": name},
        "spec": {**spec, "acceleratorRequirements": {"acceleratorClasses": classes}},
    }


def _gpu_requests() -> Iterator[tuple[str, Message]]:
    isvc = {"kind": "InferenceService", "metadata": {"name": "chat", "namespace": "default"}}
    auto = {**isvc, "spec": {"model": {"name": MODEL_NAME}, "engine": {"minReplicas": 1}}}
    named = {**isvc, "spec": {**auto["spec"], "runtime": {"name": "srt-a"}}}  # type: ignore[dict-item]
    given = rpb.InferenceServiceInput(manifest=json.dumps(auto))
    yield "Select", pb.SelectRequest(inference_service=given, view=pb.VERDICT_VIEW_FULL)
    yield "Explain", pb.ExplainRequest(inference_service=given, view=pb.VERDICT_VIEW_FULL)
    model = pb.ModelSubject(model=rpb.ModelRef(name=MODEL_NAME), namespace="default")
    yield "Explain model", pb.ExplainRequest(model=model, view=pb.VERDICT_VIEW_FULL)
    yield "Effective", pb.EffectiveRequest(inference_service=given)
    yield "Admit", pb.AdmitRequest(object=rpb.Object(manifest=given.manifest))
    yield (
        "Effective naming srt-a",
        pb.EffectiveRequest(inference_service=rpb.InferenceServiceInput(manifest=json.dumps(named))),
    )
    yield "Admit naming srt-a", pb.AdmitRequest(object=rpb.Object(manifest=json.dumps(named)))
    yield (
        "Resolve naming srt-a",
        pb.ResolveRequest(inference_service=rpb.InferenceServiceInput(manifest=json.dumps(named))),
    )


def test_an_accelerator_class_edited_changes_the_fast_paths_answers_as_the_plain_paths(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Issue 37's story: a rule excludes runtimes whose AcceleratorClasses have under 40 GiB of GPU
    memory (a fact with source catalog); srt-a runs on gpu-a, edited from 80 GiB to 16 GiB (and
    back). The fast path, asked before each edit, keeps nothing the edit makes stale."""
    revision = _rules(tmp_path_factory, HERE / "rules" / "accelerator-memory.yaml")
    runtimes = [_runtime_on("srt-a", ["gpu-a"]), _runtime_on("srt-b", ["gpu-b"])]
    big = Catalog.of([*_parsed([*runtimes, model_manifest()]), _accelerator_class("80Gi")])
    small = big.changed([_accelerator_class("16Gi")])
    fast = Decider(revision)
    isvc = parse_inference_service(json.loads(next(_gpu_requests())[1].inference_service.manifest))  # type: ignore[attr-defined]
    fast.prepare(big)
    selected = {}
    for label, snapshot in (("80 GiB", big), ("16 GiB", small), ("80 GiB again", big)):
        differ = [w for w, r in _gpu_requests() if _answer(r, fast, snapshot) != _answer(r, fast.plain(), snapshot)]
        assert differ == [], f"at {label}, the fast path differs from the plain path for {differ}"
        answers = [
            [v.runtime.meta.name for v in decider.select(snapshot, isvc).ranking] for decider in (fast, fast.plain())
        ]
        assert answers[0] == answers[1], f"at {label}: fast {answers[0]}, plain {answers[1]}"
        selected[label] = answers[1]
    # srt-b's gpu-b is defined nowhere: no memory read, no exclusion
    assert selected == {"80 GiB": ["srt-a", "srt-b"], "16 GiB": ["srt-b"], "80 GiB again": ["srt-a", "srt-b"]}
