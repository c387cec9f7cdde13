"""A Select answer's ranking is sent as bytes kept per shared verdict (policyd/server/wire.py):
each ranked runtime must still read as the contract's RankedRuntime — its name, kind and
namespace, its score, the index of the supported format it matched and that format — the first
time a verdict is encoded and when its bytes are reused for another request."""

from __future__ import annotations

import json

from testkit.catalog_dir import load_directory
from testkit.shared import CATALOG, RULES

from policyd.catalog.snapshot import Catalog
from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb
from policyd.decision.decider import Decider
from policyd.decision.verdicts import RuntimeVerdict
from policyd.policy.revision import build_revision
from policyd.resources.manifests import parse_inference_service, parse_object
from policyd.server import responses, wire
from policyd.server.fieldcheck import FieldCheck
from policyd.server.observability import DecisionLog
from policyd.server.servicer import PolicyServicer


def _isvc(model: str, name: str) -> dict[str, object]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"model": {"name": model}, "engine": {"minReplicas": 1}},
    }


def _ranked(e: RuntimeVerdict) -> pb.RankedRuntime:
    """A ranked runtime as the contract has it, made from the runtime and its verdict in full."""
    return pb.RankedRuntime(
        name=e.runtime.meta.name,
        kind=e.runtime.kind,
        namespace=e.runtime.meta.namespace,
        score=e.score,
        entry_index=e.entry_index,
        entry=responses.entry(e.runtime.entries[e.entry_index]),
    )


def test_each_ranked_runtime_reads_as_its_name_kind_score_and_matched_format() -> None:
    decider = Decider(build_revision(RULES))
    catalog = Catalog.of(load_directory(CATALOG).objects)
    decider.prepare(catalog)
    servicer = PolicyServicer(None, DecisionLog(None))  # type: ignore[arg-type]
    ranked = 0
    for key in sorted(catalog.models):
        model = catalog.models[key].meta.name
        for name in ("first", "second"):  # the second answer reuses the bytes the first kept
            doc = _isvc(model, name)
            expected = [_ranked(e) for e in decider.select(catalog, parse_inference_service(doc)).ranking]
            request = pb.SelectRequest(inference_service=rpb.InferenceServiceInput(manifest=json.dumps(doc)))
            answer = servicer._select(request, decider, catalog, FieldCheck()).message()
            assert list(answer.ranking) == expected, f"{model} ({name})"
            ranked += len(expected)
    assert ranked > 50


# What each field of a ranked row is read from. The wire keeps all but the identity by the verdict
# and the runtime's shape (a verdict stands for every runtime of its shape): a field read from a
# runtime's metadata (its name, namespace, labels…) belongs with the identity, encoded per runtime.
IDENTITY = {"name", "kind", "namespace"}
BY_VERDICT_AND_SHAPE = {
    "score": "the verdict's",
    "entry_index": "the verdict's matched entry",
    "entry": "that entry of the runtime's spec, which its shape holds",
}


def test_every_ranked_row_field_is_the_runtimes_identity_or_read_from_its_verdict_and_shape() -> None:
    fields = {f.name for f in pb.RankedRuntime.DESCRIPTOR.fields}
    assert fields == IDENTITY | BY_VERDICT_AND_SHAPE.keys(), "a new RankedRuntime field: say where it is read from"
    assert set(pb.RankedRuntime.DESCRIPTOR.fields_by_name) & IDENTITY == {
        f.name for f in pb.RuntimeVerdict.DESCRIPTOR.fields if f.number <= 3
    }  # the identity is encoded once, as a RuntimeVerdict's fields 1-3, for both messages


def test_runtimes_of_one_shape_under_other_names_share_all_of_a_ranked_row_but_their_identity() -> None:
    decider = Decider(build_revision(RULES))
    catalog = Catalog.of(load_directory(CATALOG).objects)
    model = next(
        k[2]
        for k in sorted(catalog.models)
        if decider.select(catalog, parse_inference_service(_isvc(k[2], "x"))).ranking
    )
    first = decider.select(catalog, parse_inference_service(_isvc(model, "first"))).ranking[0]
    raw = json.loads(json.dumps(first.runtime.raw))
    raw["metadata"] = {**raw["metadata"], "name": "a-copy", "labels": {"team": "b"}}
    copied = catalog.changed([parse_object(raw)])  # type: ignore[list-item]
    rows = decider.select(copied, parse_inference_service(_isvc(model, "again"))).ranking
    both = [e for e in rows if e.runtime.meta.name in (first.runtime.meta.name, "a-copy")]
    assert len(both) == 2 and both[0].verdict is both[1].verdict  # one verdict stands for both
    answer = pb.SelectResponse.FromString(wire.ranking(both))
    assert list(answer.ranking) == [_ranked(e) for e in both]
